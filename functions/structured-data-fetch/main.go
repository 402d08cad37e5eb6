// Command structured-data-fetch is the http tool's Lambda function: a
// hardened fetch behind the governed dispatcher, to hosts on both the
// platform's allow-list and the run's pinned toolset (docs/tools.md lists
// its environment).
package main

import (
	"os"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/fetch"
)

func main() {
	cfg, err := fetch.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(coldstart.Logger(), "bad configuration", cfg, err)
	dispatch.Main("structured-data-fetch", cfg.Tool())
}
