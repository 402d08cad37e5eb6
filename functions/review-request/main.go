// Command review-request is the review Task's Lambda function: invoked
// with a task token (lambda:invoke.waitForTaskToken), it stores the pending
// review and returns while the Task keeps waiting for the decision
// (docs/reviews.md lists its environment).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	table, err := review.RequestConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error("bad configuration", "error", err.Error())
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load AWS configuration", "error", err.Error())
		os.Exit(1)
	}
	db := dynamodb.NewFromConfig(awsCfg)
	h := &review.RequestHandler{Store: review.NewStore(db, table), Ledger: ledger.New(db, table), Log: log}
	lambda.Start(h.Handle)
}
