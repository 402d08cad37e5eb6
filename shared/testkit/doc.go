// Package testkit holds test support that the tests of several packages
// share and that needs nothing but the standard library: LoadJSONL reads
// the JSON Lines case files under testdata/ (testdata/email,
// testdata/fetch, testdata/events); SameAsRegexp holds a pattern that
// replaces a regexp to that regexp's answers; Buffer is a bytes.Buffer
// goroutines may write and read at once. Only tests import it.
package testkit
