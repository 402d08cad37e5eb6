// Package credtest sets a toolset-scope credential on the local stand-ins
// for tests of the packages that present one (mcptool, httptool) and of
// the dispatcher: sealed under local-kms's key, put on a table of
// dynalite, its toolset id allowed, as a credential admin's
// `toolgate credentials set` and `allow` leave it (docs/credentials.md).
// It is apart from package localtest because it imports
// shared/credential/vault, whose own tests use localtest.
package credtest
