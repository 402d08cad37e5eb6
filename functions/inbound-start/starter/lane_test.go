package starter_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/toolgate/toolgate/functions/inbound-start/starter"
	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// inProcess stands in for the Lambda service's Invoke (no Lambda
// emulator answers Invoke by ARN here): it hands the payload to
// review-request's own handler, in this process, and answers as Lambda
// does, a function error as {errorType, errorMessage} with FunctionError
// set. It checks the function name the Lane asked for.
type inProcess struct {
	h    *request.Handler
	want string
}

func (p *inProcess) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	if aws.ToString(in.FunctionName) != p.want {
		return nil, errors.New("invoked " + aws.ToString(in.FunctionName) + ", not the start alias")
	}
	out, err := p.h.Handle(ctx, in.Payload)
	var fe messages.InvokeResponse_Error
	if errors.As(err, &fe) {
		b, _ := json.Marshal(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
		return &lambda.InvokeOutput{StatusCode: 200, Payload: b, FunctionError: aws.String("Unhandled")}, nil
	}
	if err != nil {
		return nil, err
	}
	return &lambda.InvokeOutput{StatusCode: 200, Payload: out}, nil
}

// countingSTS counts the AssumeRole calls the Lane makes to the stand-in.
type countingSTS struct {
	*sts.Client
	n atomic.Int64
}

func (c *countingSTS) AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, opts ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	c.n.Add(1)
	return c.Client.AssumeRole(ctx, in, opts...)
}

// The Lane assumes the inbound-start role on the STS stand-in with the
// function's own keys, signs the start request with the session, and
// review-request's start lane (its handler, with the verifier on the same
// stand-in) records the session as the starter, with the origin; the
// session is reused; the same request again refreshes the record; another
// input under the name is ErrStartRecorded.
func TestTheLaneRecordsTheStartAsTheInboundSession(t *testing.T) {
	ddb, db, table := localtest.SharedTable(t, "lane")
	callers := localtest.StartCallers(t)
	const roleName = "toolgate-dev-inbound-start"
	role := "arn:aws:iam::" + local.LocalAccountID + ":role/" + roleName
	if err := callers.STS.Trust(roleName, "inbound-start"); err != nil {
		t.Fatal(err)
	}
	callerCfg := caller.Config{Endpoint: callers.STS.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID, SessionRoles: []string{roleName}}
	v, err := caller.NewVerifier(callerCfg, ledger.ProofTable{DB: local.DynamoDB(ddb.Endpoint()), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	inboundRole, err := request.ParseInboundRole(role, local.LocalAccountID, []string{roleName})
	if err != nil {
		t.Fatal(err)
	}
	reviews := dynamo.NewStore(db, table)
	h := request.NewHandler(request.Config{Lane: lane.Start, Callers: caller.Config{Account: local.LocalAccountID}, Region: local.Region, Stage: "dev"},
		request.Deps{Store: reviews, Callers: v, InboundRole: inboundRole})

	keys, err := callers.Keys.Credentials("inbound-start")
	if err != nil {
		t.Fatal(err)
	}
	stsClient := &countingSTS{Client: sts.New(sts.Options{Region: local.Region, BaseEndpoint: aws.String(callers.STS.Endpoint()),
		Credentials: credentials.StaticCredentialsProvider{Value: keys}})}
	fn := "arn:aws:lambda:" + local.Region + ":" + local.LocalAccountID + ":function:toolgate-dev-review-request:start"
	l := &starter.Lane{Function: starter.FunctionConfig{Region: local.Region, InboundRole: role, STSEndpoint: callers.STS.Endpoint(), StartFunction: fn},
		STS: stsClient, Lambda: &inProcess{h: h, want: fn}}

	arn := "arn:aws:states:" + local.Region + ":" + local.LocalAccountID + ":execution:toolgate-dev_notify:in-00112233445566778899aabbccddeeff"
	origin := review.StartOrigin{Kind: review.OriginSource, Name: "billing", AddedBy: local.LocalPrincipal("ops"), Event: "msg_1", Holders: []string{local.LocalPrincipal("ops")}}
	req := review.StartRequest{Action: review.StartAction, ExecutionARN: arn, InputDigest: "sha256:" + strings.Repeat("ab", 32), Origin: &origin}
	session := inbound.SessionPrefixSource + "billing"
	if err := l.RecordStart(t.Context(), session, req); err != nil {
		t.Fatal(err)
	}
	starterARN, err := reviews.Starter(t.Context(), arn)
	if err != nil {
		t.Fatal(err)
	}
	if want := "arn:aws:sts::" + local.LocalAccountID + ":assumed-role/" + roleName + "/" + session; starterARN != want {
		t.Fatalf("starter %q, want %q", starterARN, want)
	}
	// The same start again (a retry after a crash before StartExecution):
	// the record is refreshed, not refused; the session is reused.
	if err := l.RecordStart(t.Context(), session, req); err != nil {
		t.Fatalf("the same start again: %v", err)
	}
	if n := stsClient.n.Load(); n != 1 {
		t.Errorf("%d AssumeRole calls for one session, want 1", n)
	}
	// Another input under the name: [start-recorded].
	other := req
	other.InputDigest = "sha256:" + strings.Repeat("cd", 32)
	if err := l.RecordStart(t.Context(), session, other); !errors.Is(err, starter.ErrStartRecorded) {
		t.Fatalf("another input under a recorded name: %v, want ErrStartRecorded", err)
	}
	// A session of another source's name may not claim this origin.
	if err := l.RecordStart(t.Context(), inbound.SessionPrefixSource+"other", req); err == nil || errors.Is(err, starter.ErrStartRecorded) ||
		!strings.Contains(err.Error(), "start-origin") {
		t.Fatalf("another session's origin: %v, want [start-origin]", err)
	}
}
