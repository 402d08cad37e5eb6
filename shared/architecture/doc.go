// Package architecture declares the layers of toolgate's Go packages and
// the directions in which they may import each other (docs/design.md, "The
// house"). Its tests hold every package of the module to that declaration
// with `go list`: each package sits in exactly one layer, imports only from
// the layers its own may use, and links none of the modules its layer
// forbids (an AWS service client in the compiler, a Lambda runtime in the
// CDK app); the README's layout table names every package.
//
// The package has no code a function or the CLI links; it is data and tests.
package architecture
