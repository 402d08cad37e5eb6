// Package localtest starts infra/local's stand-ins from tests: each helper
// starts a fresh stand-in, registers t.Cleanup(Stop), and fails the test
// (never skips it) when the stand-in cannot start.
package localtest
