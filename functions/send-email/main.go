// Command send-email is the send-email tool's Lambda function: SES v2
// behind the governed dispatcher, from the configured sender to
// allow-listed recipients only (docs/tools.md lists its environment).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/sendemail"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := sendemail.ConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error("bad configuration", "error", err.Error())
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load AWS configuration", "error", err.Error())
		os.Exit(1)
	}
	cfg.Log = log
	dispatch.Main("send-email", sendemail.Tool(cfg, testHook(sesv2.NewFromConfig(awsCfg))))
}
