package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
)

// reviewEnv is the review-decision function under the RIE on dynalite,
// with the STS stand-in proving callers (`--as NAME` signs with NAME's
// local keys, arn:aws:iam::000000000000:user/NAME). Step Functions is a
// FAKE (reviewtest.SFN, an httptest server speaking AWS JSON 1.0): no
// stand-in is available to these tests.
type reviewEnv struct {
	store    *ledger.Store
	reviews  *dynamo.Store
	dynamo   string
	sfn      *reviewtest.SFN
	decision *local.Process
	callers  *localtest.Callers
	// cli is the CLI's environment: localAWS with the callers' keys and
	// STS stand-in.
	cli environ
}

func newReviewEnv(t *testing.T) *reviewEnv {
	t.Helper()
	store, flags := ledgerEnv(t)
	e := &reviewEnv{store: store, dynamo: flags[1], sfn: reviewtest.NewSFN(t), callers: localtest.StartCallers(t)}
	e.cli = localAWS().with(e.callers.CLIEnv())
	e.reviews = reviewStoreOn(t, e.dynamo, store.Table())
	vars := e.callers.Env(map[string]string{dispatch.EnvTable: store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": e.dynamo, "AWS_ENDPOINT_URL_SFN": e.sfn.URL})
	e.decision = localtest.RIE(t, "review-decision", localtest.Bootstrap(t, "../../functions/review-decision"), 10*time.Second, vars)
	return e
}

// as is a local name's principal.
func as(name string) string { return local.LocalPrincipal(name) }

func reviewStoreOn(t *testing.T, endpoint, table string) *dynamo.Store {
	db := local.DynamoDB(endpoint)
	return dynamo.NewStore(db, table)
}

// pending stores a review as review-request would for a Task with token.
func (e *reviewEnv) pending(t *testing.T, token string, reviewers ...string) *review.Review {
	t.Helper()
	r, err := review.New(review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: review.IDForToken(token), TaskToken: token, RunID: "arn:aws:states:us-east-1:123456789012:execution:sm:" + review.NewID(),
		Step: "approve", Of: "send", Tool: "send-email", ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58",
		Input: json.RawMessage(`{"to":["team@example.com"],"subject":"Weekly digest","text":"Three items."}`), Reviewers: reviewers, TimeoutSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.reviews.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReviewCommandLocal(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	r := e.pending(t, "token-cli-1")
	local := []string{"--endpoint", e.decision.Endpoint(), "--as", "alice"}
	args := func(a ...string) []string { return append(append([]string{"review"}, a...), local...) }

	code, out, errs := e.cli.run(args("list")...)
	if code != ExitOK || !strings.Contains(out, r.ID) || !strings.Contains(out, "send-email") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = e.cli.run(args("show", r.ID)...)
	if code != ExitOK || !strings.Contains(out, `"subject": "Weekly digest"`) || !strings.Contains(out, r.InputDigest) || strings.Contains(out, "token-cli-1") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = e.cli.run(args("approve", r.ID, "--reason", "recipients checked")...)
	if code != ExitOK || !strings.Contains(out, "approved by "+as("alice")) {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errs)
	}
	if calls := e.sfn.Calls("token-cli-1"); len(calls) != 1 || calls[0].Action != "SendTaskSuccess" || !strings.Contains(calls[0].Output, `"reason":"recipients checked"`) {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	code, out, _ = e.cli.run(args("approve", r.ID)...)
	if code != ExitOK || !strings.Contains(out, "already approved by "+as("alice")) {
		t.Fatalf("repeated approval: exit %d\n%s", code, out)
	}
	code, _, errs = e.cli.run(args("reject", r.ID, "--reason", "no")...)
	if code != ExitErrors || !strings.Contains(errs, "REVIEW_CONFLICT") {
		t.Fatalf("conflicting rejection: exit %d\n%s", code, errs)
	}
	code, out, _ = e.cli.run(args("list", "--status", "approved", "--json")...)
	if code != ExitOK || !strings.Contains(out, `"approver": "`+as("alice")+`"`) {
		t.Fatalf("approved list: exit %d\n%s", code, out)
	}
	r2 := e.pending(t, "token-cli-2")
	if code, out, errs := e.cli.run(args("reject", r2.ID, "--reason", "wrong list")...); code != ExitOK || !strings.Contains(out, "rejected by "+as("alice")) {
		t.Fatalf("reject: exit %d\n%s%s", code, out, errs)
	}
	if calls := e.sfn.Calls("token-cli-2"); len(calls) != 1 || calls[0].Error != review.ErrorRejected {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	if code, _, errs := e.cli.run(args("show", review.NewID())...); code != ExitErrors || !strings.Contains(errs, "REVIEW_NOT_FOUND") {
		t.Fatalf("unknown review: exit %d %s", code, errs)
	}
	editors := e.pending(t, "token-cli-3", "arn:aws:iam::*:user/editor-*")
	if code, _, errs := e.cli.run(args("approve", editors.ID)...); code != ExitErrors || !strings.Contains(errs, "REVIEW_FORBIDDEN") {
		t.Fatalf("alice is no editor: exit %d %s", code, errs)
	}
	own := e.pending(t, "token-cli-4")
	if code, _, errs := e.cli.run("review", "approve", own.ID, "--endpoint", e.decision.Endpoint(), "--as", "requester"); code != ExitErrors || !strings.Contains(errs, "REVIEW_SELF_APPROVAL") {
		t.Fatalf("the requester approves: exit %d %s", code, errs)
	}
	if code, _, errs := e.cli.run("review", "list", "--endpoint", e.decision.Endpoint(), "--as", "Not A Name"); code != ExitMisuse {
		t.Fatalf("--as with a bad name: exit %d %s", code, errs)
	}

	for name, a := range map[string][]string{
		"no subcommand":         {"review"},
		"unknown subcommand":    {"review", "delete", r.ID, "--endpoint", "x", "--as", "a"},
		"no endpoint or url":    {"review", "list"},
		"--as with --url":       {"review", "list", "--url", "https://x.lambda-url.us-east-1.on.aws/", "--as", "a"},
		"--endpoint, no --as":   {"review", "list", "--endpoint", e.decision.Endpoint()},
		"reject without reason": args("reject", r2.ID),
		"show without id":       args("show"),
		"list with an argument": args("list", r.ID),
		"both transports":       {"review", "list", "--endpoint", "x", "--as", "a", "--url", "https://x/"},
	} {
		if code, _, _ := e.cli.run(a...); code != ExitMisuse {
			t.Errorf("%s: exit %d, want %d", name, code, ExitMisuse)
		}
	}
}

// On AWS the CLI signs its requests (SigV4, service lambda) to the
// Function URL, each with a caller proof signed with the same credentials
// (here a local identity's, so that the STS stand-in knows them). The
// Function URL's front is a FAKE here: it checks the signature by signing
// the request again with the same credentials, then hands the function the
// event Lambda would, with an IAM principal in its request context that
// the function must ignore: the proof says who calls.
func TestReviewCommandFunctionURL(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	principal := as("editor-alice")
	creds, err := e.callers.Keys.Credentials("editor-alice")
	if err != nil {
		t.Fatal(err)
	}
	e.cli = e.cli.with(map[string]string{"AWS_ACCESS_KEY_ID": creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": creds.SecretAccessKey})
	r := e.pending(t, "token-url", "arn:aws:iam::*:user/editor-*")
	var mu sync.Mutex
	var signed []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := checkSigV4(req, body, creds); err != nil {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"Message":%q}`, err.Error())
			return
		}
		mu.Lock()
		signed = append(signed, req.Method+" "+req.URL.Path)
		mu.Unlock()
		q := map[string]string{}
		for k, v := range req.URL.Query() {
			q[k] = v[0]
		}
		headers := map[string]string{}
		for k := range req.Header {
			headers[strings.ToLower(k)] = req.Header.Get(k)
		}
		ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: req.URL.Path, RawQueryString: req.URL.RawQuery, QueryStringParameters: q, Headers: headers,
			Body: string(body), RequestContext: events.LambdaFunctionURLRequestContext{
				HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: req.Method, Path: req.URL.Path},
				Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: as("someone-else"), AccountID: "000000000000"}},
			}}
		payload, _ := json.Marshal(ev)
		resp, err := http.Post(e.decision.InvokeURL(), "application/json", bytes.NewReader(payload))
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var out events.LambdaFunctionURLResponse
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &out); err != nil || out.StatusCode == 0 {
			w.WriteHeader(http.StatusBadGateway)
			w.Write(raw)
			return
		}
		w.WriteHeader(out.StatusCode)
		io.WriteString(w, out.Body)
	}))
	defer front.Close()

	code, out, errs := e.cli.run("review", "list", "--url", front.URL)
	if code != ExitOK || !strings.Contains(out, r.ID) {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = e.cli.run("review", "approve", r.ID, "--url", front.URL, "--reason", "ok")
	if code != ExitOK || !strings.Contains(out, "approved by "+principal) {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errs)
	}
	cur, err := e.reviews.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatalf("Get(%s): %v", r.ID, err)
	}
	if cur.Approver != principal || !cur.Authenticated || len(e.sfn.Accepted("token-url")) != 1 {
		t.Fatalf("record %+v", cur)
	}
	if len(signed) != 3 || signed[0] != "GET /reviews" || signed[1] != "GET /reviews/"+r.ID || signed[2] != "POST /reviews/"+r.ID {
		t.Fatalf("signed requests %v", signed)
	}
	// Without credentials nothing is signed: the front refuses, as IAM would.
	e.cli = e.cli.with(map[string]string{"AWS_SECRET_ACCESS_KEY": "wrong"})
	if code, _, errs := e.cli.run("review", "list", "--url", front.URL); code != ExitErrors || !strings.Contains(errs, "HTTP 403") {
		t.Fatalf("bad signature: exit %d %s", code, errs)
	}
}

var credentialPattern = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/lambda/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`)

// checkSigV4 signs the request again with signer, the test's credentials,
// and the same time and signed headers, and compares the signatures.
func checkSigV4(req *http.Request, body []byte, signer aws.Credentials) error {
	m := credentialPattern.FindStringSubmatch(req.Header.Get("Authorization"))
	if m == nil {
		return fmt.Errorf("not a SigV4 authorization for lambda: %q", req.Header.Get("Authorization"))
	}
	if m[1] != signer.AccessKeyID {
		return fmt.Errorf("access key %s", m[1])
	}
	at, err := time.Parse("20060102T150405Z", req.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	again, _ := http.NewRequest(req.Method, "http://"+req.Host+req.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(m[4], ";") {
		if h != "host" {
			again.Header.Set(h, req.Header.Get(h))
		}
	}
	again.ContentLength = req.ContentLength
	hash := req.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		hash = fmt.Sprintf("%x", sha256.Sum256(body))
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), signer, again, hash, "lambda", m[3], at); err != nil {
		return err
	}
	if want := credentialPattern.FindStringSubmatch(again.Header.Get("Authorization")); want == nil || want[5] != m[5] {
		return fmt.Errorf("signature mismatch")
	}
	return nil
}

// The direct lane: `toolgate invoke send-email` asks review-request for a
// review without a task token, waits for the decision, and sends the call
// with the approval (send-email, review-request and review-decision under
// the RIE, dynalite, the SES emulator). A rejection, or no decision in
// time, sends nothing.
func TestInvokeGatedToolDirectLane(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	ses := localtest.SES(t)
	send := localtest.RIE(t, "send-email", localtest.Bootstrap(t, "../../functions/send-email"), 30*time.Second, e.callers.Env(map[string]string{
		dispatch.EnvTable: e.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": e.dynamo, "TOOLGATE_LANE": "direct",
		"TOOLGATE_SENDER": "noreply@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com", "AWS_ENDPOINT_URL_SESV2": ses.Endpoint(),
	}))
	requests := localtest.RIE(t, "review-request", localtest.Bootstrap(t, "../../functions/review-request"), 10*time.Second, e.callers.Env(map[string]string{
		dispatch.EnvTable: e.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": e.dynamo, "TOOLGATE_LANE": "direct", "TOOLGATE_STAGE": "dev",
		review.EnvDirectReviewers: `{"send-email": ["arn:aws:iam::000000000000:user/*"]}`,
	}))
	input := filepath.Join(t.TempDir(), "mail.json")
	os.WriteFile(input, []byte(`{"to":["team@example.com"],"subject":"Direct","text":"Sent after a review."}`), 0o644)
	if code, _, errs := e.cli.run("toolset", "register", "--tool", "send-email", "--endpoint", e.dynamo, "--table", e.store.Table()); code != ExitOK {
		t.Fatal(errs)
	}
	invoke := func(extra ...string) chan [3]string {
		done := make(chan [3]string, 1)
		go func() {
			code, out, errs := e.cli.runPolling(50*time.Millisecond, append([]string{"invoke", "send-email", "--input", input, "--endpoint", send.Endpoint(), "--as", "operator",
				"--review-endpoint", requests.Endpoint(), "--dynamodb-endpoint", e.dynamo, "--table", e.store.Table()}, extra...)...)
			done <- [3]string{fmt.Sprint(code), out, errs}
		}()
		return done
	}
	// waitPending returns the id of the review the lane requested.
	waitPending := func(seen map[string]bool) string {
		for range 200 {
			list, err := e.reviews.List(context.Background(), review.Pending, nil)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			for _, r := range list {
				if !seen[r.ID] {
					seen[r.ID] = true
					return r.ID
				}
			}
			time.Sleep(50 * time.Millisecond) // a poll with a deadline: review-request, under the RIE, writes the review
		}
		t.Fatal("the direct lane requested no review")
		return ""
	}
	seen := map[string]bool{}
	decide := func(args ...string) {
		if code, out, errs := e.cli.run(append(append([]string{"review"}, args...), "--endpoint", e.decision.Endpoint(), "--as", "alice")...); code != ExitOK {
			t.Fatalf("review %v: exit %d\n%s%s", args, code, out, errs)
		}
	}

	done := invoke("--wait-timeout", "30s")
	id := waitPending(seen)
	r, err := e.reviews.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	if r.TaskToken != "" || r.Tool != "send-email" || r.Of != "invoke" || !strings.HasPrefix(r.RunID, lane.DirectRunPrefix(as("operator"))+"invoke-") || r.Requester != as("operator") {
		t.Fatalf("direct-lane review %+v", r)
	}
	decide("approve", id, "--reason", "fine")
	res := <-done
	if res[0] != "0" || !strings.Contains(res[1], "message_id") || !strings.Contains(res[2], "approved by "+as("alice")) {
		t.Fatalf("approved: exit %s\n%s%s", res[0], res[1], res[2])
	}
	r, _ = e.reviews.Get(context.Background(), id)
	if bound, err := e.reviews.BoundKey(context.Background(), id); err != nil || bound != r.RunID+"/1" {
		t.Fatalf("the approval is not bound to the call: %q %v", bound, err)
	}

	done = invoke("--wait-timeout", "30s")
	id = waitPending(seen)
	decide("reject", id, "--reason", "not today")
	if res := <-done; res[0] != "1" || !strings.Contains(res[2], "rejected by "+as("alice")) || !strings.Contains(res[2], "not today") {
		t.Fatalf("rejected: exit %s\n%s%s", res[0], res[1], res[2])
	}

	done = invoke("--wait-timeout", "1s")
	if res := <-done; res[0] != "1" || !strings.Contains(res[2], "no decision on review") {
		t.Fatalf("no decision: exit %s\n%s%s", res[0], res[1], res[2])
	}
	if code, _, errs := e.cli.run("invoke", "send-email", "--input", input, "--endpoint", send.Endpoint(), "--dynamodb-endpoint", e.dynamo,
		"--table", e.store.Table(), "--wait-timeout", "11m"); code != ExitMisuse {
		t.Fatalf("--wait-timeout 11m: exit %d %s", code, errs)
	}

	resp, err := http.Get(ses.Endpoint() + "/store")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var store struct{ Emails []struct{ Subject string } }
	json.NewDecoder(resp.Body).Decode(&store)
	if len(store.Emails) != 1 || store.Emails[0].Subject != "Direct" {
		t.Fatalf("SES holds %+v, want the one approved mail", store.Emails)
	}
}
