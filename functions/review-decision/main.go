// Command review-decision takes reviewers' decisions: behind an
// IAM-authorised Function URL on AWS (the approver is the calling IAM
// principal), it records a decision and sends it to the waiting review Task
// with SendTaskSuccess or SendTaskFailure, and lists and shows reviews, so
// that reviewers never need the table (docs/reviews.md).
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/review"
)

func main() {
	log := coldstart.Logger()
	cfg, err := review.DecisionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	svc := &review.Service{
		Store: review.NewStore(dynamodb.NewFromConfig(awsCfg), cfg.Table),
		SFN:   sfn.NewFromConfig(awsCfg),
		Log:   log,
	}
	if cfg.AllowUnauthenticated {
		log.Warn("direct invocations are taken and recorded as unauthenticated", "variable", review.EnvAllowUnauthenticated)
	}
	h := &review.DecisionHandler{Service: svc, AllowUnauthenticated: cfg.AllowUnauthenticated}
	lambda.Start(h.Handle)
}
