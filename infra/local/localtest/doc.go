// Package localtest starts infra/local's stand-ins from tests: each helper
// starts a fresh stand-in, registers t.Cleanup(Stop), and fails the test
// (never skips it) when the stand-in cannot start. SharedDynalite and
// SharedTable are the exception: one dynalite per test binary, each test
// on a table of its own, stopped by the package's TestMain (StopShared).
// PauseAfter holds an SDK call to a stand-in, for tests of what happens in
// between.
package localtest
