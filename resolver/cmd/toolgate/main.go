// Command toolgate is the toolgate CLI: `toolgate help` lists its commands,
// `toolgate COMMAND --help` explains one. Its code is package cli.
package main

import (
	"os"

	"github.com/toolgate/toolgate/resolver/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
