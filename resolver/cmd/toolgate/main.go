// Command toolgate is the toolgate CLI: `toolgate help` lists its commands.
package main

import (
	"os"

	"github.com/toolgate/toolgate/resolver/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
