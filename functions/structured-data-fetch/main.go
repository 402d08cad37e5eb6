// Command structured-data-fetch is the http tool's Lambda function: a
// hardened fetch behind the governed dispatcher, to hosts on both the
// platform's allow-list and the run's pinned toolset (docs/tools.md lists
// its environment).
package main

import (
	"log/slog"
	"os"

	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/fetch"
)

func main() {
	cfg, err := fetch.ConfigFromEnv(os.Getenv)
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stdout, nil)).Error("bad configuration", "error", err.Error())
		os.Exit(1)
	}
	dispatch.Main("structured-data-fetch", cfg.Tool())
}
