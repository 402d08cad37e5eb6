// Command review-request is the review Task's Lambda function: invoked
// with a task token (lambda:invoke.waitForTaskToken), it stores the pending
// review and returns while the Task keeps waiting for the decision
// (docs/reviews.md lists its environment).
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
)

func main() {
	log := coldstart.Logger()
	table, err := review.RequestConfigFromEnv(os.Getenv)
	table = coldstart.Must(log, "bad configuration", table, err)
	db := dynamodb.NewFromConfig(coldstart.AWSConfig(log))
	h := &review.RequestHandler{Store: review.NewStore(db, table), Ledger: ledger.New(db, table), Log: log}
	lambda.Start(h.Handle)
}
