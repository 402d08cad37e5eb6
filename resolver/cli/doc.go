// Package cli implements the toolgate command line: check, compile and
// toolset for authors (the resolver issue). cmd/toolgate only wires it to
// the process.
//
// Exit codes: 0 success (warnings allowed), 1 the input has errors, 2 misuse
// (unknown command or flag, missing argument, unreadable file).
package cli
