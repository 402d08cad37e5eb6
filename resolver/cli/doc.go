// Package cli implements the toolgate command line, with cobra: check,
// compile, toolset and toolset lock for authors; publish, run, toolset
// register, ledger, invoke, check-url, check-recipient and review for a
// deployment; version and shell completion. Every command has --help.
// cmd/toolgate only wires RunWith to the process: its environment
// (os.Getenv), AWS configuration (config.LoadDefaultConfig) and standard
// output and error (Env); a test passes its own.
//
// Exit codes: 0 success (warnings allowed), 1 the input has errors or the
// command was refused or failed, 2 misuse (unknown command or flag, missing
// argument, unreadable file), 3 check-recipient's invalid address. Help
// exits 0.
//
// Flags are spelled --flag, as pflag reads them; the one-dash -flag that
// Go's flag package read is still accepted (goFlagSpelling).
package cli
