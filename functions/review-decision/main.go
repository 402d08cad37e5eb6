// Command review-decision takes reviewers' decisions: behind an
// IAM-authorised Function URL on AWS (the approver is the calling IAM
// principal), it records a decision and sends it to the waiting review Task
// with SendTaskSuccess or SendTaskFailure, and lists and shows reviews, so
// that reviewers never need the table (docs/reviews.md).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/shared/review"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg, err := review.DecisionConfigFromEnv(os.Getenv)
	if err != nil {
		log.Error("bad configuration", "error", err.Error())
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load AWS configuration", "error", err.Error())
		os.Exit(1)
	}
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
