// Command toolgate is the toolgate CLI: `toolgate help` lists its commands,
// `toolgate COMMAND --help` explains one. Its code is package cli; this
// command only gives it the process's environment, AWS configuration and
// standard output and error.
package main

import (
	"os"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/toolgate/toolgate/resolver/cli"
)

func main() {
	os.Exit(cli.RunWith(os.Args[1:], cli.Env{
		Getenv:        os.Getenv,
		LoadAWSConfig: config.LoadDefaultConfig,
		Stdout:        os.Stdout,
		Stderr:        os.Stderr,
		Stdin:         os.Stdin,
	}))
}
