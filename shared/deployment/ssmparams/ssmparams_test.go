package ssmparams_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/ssmparams"
)

// Get reads a parameter from SSM (the SSM stand-in, infra/local), and a
// parameter SSM does not hold is deployment.ErrParamNotFound, naming it,
// as FileParams answers: the publish function and the CLI tell "not
// bound in this stage" from "SSM did not answer" either way.
func TestGetReadsAParameterAndTellsAMissingOne(t *testing.T) {
	name := deployment.TableParam("test")
	s, err := local.StartSSM(map[string]string{name: "toolgate-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p := ssmparams.Params{Client: ssm.New(ssm.Options{Region: local.Region, BaseEndpoint: aws.String(s.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})}
	if v, err := p.Get(t.Context(), name); err != nil || v != "toolgate-test" {
		t.Fatalf("Get(%s) = %q, %v; want toolgate-test", name, v, err)
	}
	missing := deployment.ReviewDecisionURLParam("test")
	_, err = p.Get(t.Context(), missing)
	if !errors.Is(err, deployment.ErrParamNotFound) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Get(%s) = %v; want ErrParamNotFound naming it", missing, err)
	}
	// An SSM that does not answer is another error, not "not found".
	s.Close()
	if _, err := p.Get(t.Context(), name); err == nil || errors.Is(err, deployment.ErrParamNotFound) {
		t.Fatalf("Get with SSM down = %v; want an error other than ErrParamNotFound", err)
	}
}
