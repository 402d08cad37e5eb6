package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/review"
)

// SessionSeconds is the inbound-start role's session duration: 900 s,
// the least sts:AssumeRole allows (its DurationSeconds parameter, 900 to
// the role's maximum). A session only signs the start proofs of the
// runs it starts.
const SessionSeconds = 900

// sessionReuse is how long before its expiry a session's credentials
// stop being reused: a proof signed with them is checked within
// caller.Window of its signing, so five minutes leave room to spare.
const sessionReuse = 5 * time.Minute

// STSAPI assumes the inbound-start role.
type STSAPI interface {
	AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, opts ...func(*sts.Options)) (*sts.AssumeRoleOutput, error)
}

// LambdaAPI invokes review-request's start alias.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Lane is the StartRecorder of the function: it assumes the inbound-start
// role (Function.InboundRole) as the session asked for, signs the start
// request's caller proof with the session's credentials
// (review.StartBindingOf; caller.Sign against Function.STSEndpoint), and
// invokes review-request's start alias (Function.StartFunction) with it.
// Sessions' credentials are reused until sessionReuse before they
// expire. The proof and the credentials are kept in no log or error.
type Lane struct {
	Function FunctionConfig
	STS      STSAPI
	Lambda   LambdaAPI
	Now      func() time.Time // nil: time.Now

	mu       sync.Mutex
	sessions map[string]aws.Credentials
}

// RIEFunctionName is the function name the Lambda Runtime Interface
// Emulator answers to: on the local stack the start alias is an RIE
// instance's URL, invoked as this function at that endpoint.
const RIEFunctionName = "function"

// RecordStart implements StartRecorder.
func (l *Lane) RecordStart(ctx context.Context, session string, req review.StartRequest) error {
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	creds, err := l.credentials(ctx, session, now)
	if err != nil {
		return err
	}
	if req.Proof, err = caller.Sign(ctx, credentials.StaticCredentialsProvider{Value: creds}, l.Function.STSEndpoint, l.Function.Region, review.StartBindingOf(&req), now); err != nil {
		return fmt.Errorf("sign the start request as %s: %w", session, err)
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return err
	}
	fn, opts := l.Function.StartFunction, []func(*lambda.Options){}
	if strings.HasPrefix(fn, "http://") {
		endpoint := fn
		fn = RIEFunctionName
		opts = append(opts, func(o *lambda.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}
	out, err := l.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload}, opts...)
	if err != nil {
		return fmt.Errorf("invoke review-request's start alias: %w", err)
	}
	var fe struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage *string `json:"errorMessage"`
	}
	switch {
	case json.Unmarshal(out.Payload, &fe) == nil && fe.ErrorType != nil && fe.ErrorMessage != nil:
	case out.FunctionError != nil:
		return fmt.Errorf("review-request's start alias failed: %s", aws.ToString(out.FunctionError))
	default:
		return nil
	}
	// The lane's messages are safe to show (review.Error): they name
	// the execution and the reason word, never the proof.
	if *fe.ErrorType == string(review.CodeForbidden) && strings.Contains(*fe.ErrorMessage, "["+ReasonStartRecorded+"]") {
		return fmt.Errorf("%w: %s", ErrStartRecorded, *fe.ErrorMessage)
	}
	return fmt.Errorf("review-request's start alias refused the start: %s: %s", *fe.ErrorType, *fe.ErrorMessage)
}

// ReasonStartRecorded is the start lane's reason word for an execution
// name that has a start record (review-request's ReasonStartRecorded).
const ReasonStartRecorded = "start-recorded"

// credentials are session's credentials: reused, or a new session of the
// inbound-start role.
func (l *Lane) credentials(ctx context.Context, session string, now time.Time) (aws.Credentials, error) {
	l.mu.Lock()
	c, ok := l.sessions[session]
	l.mu.Unlock()
	if ok && now.Add(sessionReuse).Before(c.Expires) {
		return c, nil
	}
	out, err := l.STS.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(l.Function.InboundRole), RoleSessionName: aws.String(session),
		DurationSeconds: aws.Int32(SessionSeconds)})
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("assume %s as session %s: %w", l.Function.InboundRole, session, err)
	}
	if out.Credentials == nil || out.Credentials.AccessKeyId == nil || out.Credentials.SecretAccessKey == nil || out.Credentials.SessionToken == nil {
		return aws.Credentials{}, errors.New("sts:AssumeRole answered no credentials")
	}
	c = aws.Credentials{AccessKeyID: *out.Credentials.AccessKeyId, SecretAccessKey: *out.Credentials.SecretAccessKey,
		SessionToken: *out.Credentials.SessionToken, CanExpire: true, Expires: aws.ToTime(out.Credentials.Expiration)}
	l.mu.Lock()
	if l.sessions == nil {
		l.sessions = map[string]aws.Credentials{}
	}
	l.sessions[session] = c
	l.mu.Unlock()
	return c, nil
}
