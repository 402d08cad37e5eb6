package cli

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/resolver/cli/console"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/testkit"
)

// A console command line the CLI cannot serve is refused with exit 2
// before it listens.
func TestReviewConsoleMisuseNamesTheBadFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"no transport", []string{"review", "console"}, "pass --url"},
		{"--stage with --url", []string{"review", "console", "--stage", "dev", "--url", "https://x.lambda-url.us-east-1.on.aws/"}, "--stage excludes"},
		{"--stage with --endpoint", []string{"review", "console", "--stage", "dev", "--endpoint", "http://127.0.0.1:1", "--as", "a"}, "--stage excludes"},
		{"--endpoint without --as", []string{"review", "console", "--endpoint", "http://127.0.0.1:1"}, "--endpoint needs --as"},
		{"--as with --url", []string{"review", "console", "--url", "https://x.lambda-url.us-east-1.on.aws/", "--as", "a"}, "--as is for the local stack"},
		{"a bad port", []string{"review", "console", "--port", "70000", "--endpoint", "http://127.0.0.1:1", "--as", "a"}, "--port 70000"},
		{"an argument", []string{"review", "console", "rv_1", "--endpoint", "http://127.0.0.1:1", "--as", "a"}, "takes no arguments"},
	} {
		code, _, errs := run(c.args...)
		if code != ExitMisuse || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", c.name, code, errs, ExitMisuse, c.says)
		}
	}
}

// sessionCookieName is the session cookie's name of the console that
// target (a URL on 127.0.0.1:PORT) reaches.
func sessionCookieName(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%s names no port", target)
	}
	return console.SessionCookieName(p)
}

var consoleLine = regexp.MustCompile(`^review console: (http://127\.0\.0\.1:[0-9]+)/open\?c=[A-Za-z0-9_-]{43}\n$`)

// The console on the local stack's review-decision (under the RIE, the
// STS stand-in proving --as): it prints exactly one line, its link opens
// it once, the page lists the pending review, and approving it from the
// page decides it as the reviewer, signed by the CLI.
func TestReviewConsoleLocalApprovesFromThePage(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	r := e.pending(t, "token-console-1")
	c := startLocalConsole(t, e, "alice")
	origin, cookie := c.origin, c.cookie
	if resp, _ := c.do(http.MethodGet, c.link, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("second open: %d; want 403", resp.StatusCode)
	}
	resp, body := c.do(http.MethodGet, origin+"/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-review-id="`+r.ID+`"`) {
		t.Fatalf("list: %d %s\n%s", resp.StatusCode, body, c.stderr())
	}
	resp, body = c.do(http.MethodGet, origin+"/reviews/"+r.ID, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, r.InputDigest) || !strings.Contains(body, "Weekly digest") {
		t.Fatalf("show: %d %s", resp.StatusCode, body)
	}
	token := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1]
	form := url.Values{"csrf": {token}, "digest": {r.InputDigest}, "decision": {"approve"}, "reason": {"read in the console"}}
	if resp, body := c.do(http.MethodPost, origin+"/reviews/"+r.ID+"/decide", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", resp.StatusCode, body)
	}
	if calls := e.sfn.Calls("token-console-1"); len(calls) != 1 || calls[0].Action != "SendTaskSuccess" || !strings.Contains(calls[0].Output, `"reason":"read in the console"`) {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	resp, body = c.do(http.MethodGet, origin+"/reviews/"+r.ID, nil)
	if !strings.Contains(body, `id="outcome"`) || !strings.Contains(body, "approved by "+as("alice")) {
		t.Fatalf("after approving: %d %s", resp.StatusCode, body)
	}
	// A decision bound to another digest than the review's is refused.
	r2 := e.pending(t, "token-console-2")
	form = url.Values{"csrf": {token}, "digest": {"sha256:" + strings.Repeat("0", 64)}, "decision": {"approve"}}
	_, body = c.do(http.MethodGet, origin+"/reviews/"+r2.ID, nil)
	form.Set("csrf", regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1])
	if resp, body := c.do(http.MethodPost, origin+"/reviews/"+r2.ID+"/decide", form); resp.StatusCode < 400 || !strings.Contains(body, `id="refusal"`) {
		t.Fatalf("approve with another digest: %d %s", resp.StatusCode, body)
	}
	if calls := e.sfn.Calls("token-console-2"); len(calls) != 0 {
		t.Fatalf("a decision on another digest reached Step Functions: %+v", calls)
	}
	if log := c.stderr(); strings.Contains(log, cookie) || strings.Contains(log, strings.TrimPrefix(c.link, origin+"/open?c=")) {
		t.Fatalf("the console's log holds the cookie or the capability: %s", log)
	}
}

// --stage S reads review-decision's Function URL from SSM (the SSM
// stand-in) and the console's requests go to it, SigV4-signed with a
// caller proof; a stage without the parameter stops it with exit 1
// naming the parameter.
func TestReviewConsoleStageReadsTheFunctionURLFromSSM(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []*http.Request
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error":{"code":"REVIEW_FORBIDDEN","message":"not a reviewer"}}`)
	}))
	t.Cleanup(fn.Close)
	ssmd, err := local.StartSSM(map[string]string{deployment.ReviewDecisionURLParam("dev"): fn.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ssmd.Close() })
	vars := localAWS().with(map[string]string{"AWS_ENDPOINT_URL": ssmd.Endpoint()})

	if code, _, errs := vars.run("review", "console", "--no-open", "--stage", "nope"); code != ExitErrors || !strings.Contains(errs, deployment.ReviewDecisionURLParam("nope")) {
		t.Fatalf("a stage without the parameter: exit %d %q", code, errs)
	}

	pr, pw := io.Pipe()
	stop := make(chan struct{})
	exited := make(chan int, 1)
	var errb strings.Builder
	go func() {
		exited <- RunWith([]string{"review", "console", "--no-open", "--stage", "dev"},
			Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars), Stdout: pw, Stderr: &errb, Stop: stop})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	m := consoleLine.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("stdout %q, %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: time.Minute}
	get := func(target, cookie string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Sec-Fetch-Site", "none")
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		req.Header.Set("Sec-Fetch-Dest", "document")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: sessionCookieName(t, target), Value: cookie})
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := get(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "review console: "), "")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("open: %d", resp.StatusCode)
	}
	resp, body := get(m[1]+"/", resp.Cookies()[0].Value)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "you are not a reviewer") {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the console called no Function URL")
	}
	for _, r := range seen {
		if !strings.HasPrefix(r.URL.Path, "/reviews") && !strings.HasPrefix(r.URL.Path, "/parks") ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || r.Header.Get(review.ProofHeader) == "" {
			t.Errorf("%s %s: want a SigV4-signed request with a caller proof (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))
		}
	}
	if strings.Contains(body, seen[0].Header.Get(review.ProofHeader)) {
		t.Fatal("the page holds a caller proof")
	}
	close(stop)
	if code := <-exited; code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// localConsole is toolgate review console on e's review-decision, run
// in-process as as, opened with its link: do sends a request as the
// console's own page does, with the session cookie.
type localConsole struct {
	// origin is http://127.0.0.1:PORT, link the printed link (used once
	// already) and cookie the session cookie's value.
	origin, link, cookie string
	do                   func(method, target string, form url.Values) (*http.Response, string)
	stderr               func() string
}

func startLocalConsole(t *testing.T, e *reviewEnv, as string) *localConsole {
	t.Helper()
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	var errb testkit.Buffer
	vars := maps.Clone(e.cli)
	exited := make(chan int, 1)
	go func() {
		exited <- RunWith([]string{"review", "console", "--no-open", "--endpoint", e.decision.Endpoint(), "--as", as},
			Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars), Stdout: pw, Stderr: &errb, Stop: stop})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	m := consoleLine.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("stdout %q, %v; want one line %s", line, err, consoleLine)
	}
	go io.Copy(io.Discard, pr)
	c := &localConsole{origin: m[1], link: strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "review console: "), stderr: errb.String}
	t.Cleanup(func() {
		close(stop)
		if code := <-exited; code != ExitOK {
			t.Errorf("exit %d: %s", code, c.stderr())
		}
	})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: time.Minute}
	c.do = func(method, target string, form url.Values) (*http.Response, string) {
		t.Helper()
		req := consoleRequest(t, method, target, c.origin, form, c.cookie)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := c.do(http.MethodGet, c.link, nil)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("open: %d %v", resp.StatusCode, resp.Cookies())
	}
	c.cookie = resp.Cookies()[0].Value
	return c
}

// A parked call decided from a page that showed an older definition is
// refused on the local stack: the decision's proof is bound to the
// current definition's digest the page showed, not read again when the
// button is pressed; the page read again decides it.
func TestReviewConsoleParkDecisionFromAStalePageIsRefused(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	id, token := e.parkedItem(t, as("bob"))
	c := startLocalConsole(t, e, "bob")
	field := func(body, name string) string {
		t.Helper()
		f := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(body)
		if f == nil {
			t.Fatalf("the park page has no %s field: %s", name, body)
		}
		return f[1]
	}
	_, old := c.do(http.MethodGet, c.origin+"/parks/"+id, nil)
	if got := field(old, "digest"); got != "sha256:"+strings.Repeat("2", 64) {
		t.Fatalf("the page's form carries digest %q, want the current definition's", got)
	}
	// The tool's definition changes again while the page is open.
	newer := "sha256:" + strings.Repeat("3", 64)
	if _, err := local.DynamoDB(e.dynamo).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(e.store.Table()),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: table.Park.Key(id)}, "sk": &types.AttributeValueMemberS{Value: table.Park.SKValue}},
		UpdateExpression:          aws.String("SET current_digest = :d"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: newer}}}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"csrf": {field(old, "csrf")}, "digest": {field(old, "digest")}, "decision": {"approve"}}
	if resp, body := c.do(http.MethodPost, c.origin+"/parks/"+id+"/decide", form); resp.StatusCode < 400 || !strings.Contains(body, `id="refusal"`) {
		t.Fatalf("approve from the page of the older definition: %d %s", resp.StatusCode, body)
	}
	if calls := e.sfn.Calls(token); len(calls) != 0 {
		t.Fatalf("a decision on the older definition reached Step Functions: %+v", calls)
	}
	_, fresh := c.do(http.MethodGet, c.origin+"/parks/"+id, nil)
	form.Set("digest", field(fresh, "digest"))
	if resp, body := c.do(http.MethodPost, c.origin+"/parks/"+id+"/decide", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve from the page read again: %d %s", resp.StatusCode, body)
	}
	if calls := e.sfn.Calls(token); len(calls) != 1 || calls[0].Action != "SendTaskSuccess" {
		t.Fatalf("Step Functions calls %+v", calls)
	}
}

// On the local stack, a reviewer whose pattern does not admit them and a
// reviewer of another AWS account (the local `--as ACCOUNT/NAME` form)
// approving from the console are refused, in words, and no Task hears of
// it; the reviewer the pattern names then approves.
func TestReviewConsoleRefusesOtherAccountsAndUnlistedReviewersInWords(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	r := e.pending(t, "token-console-outsiders", as("carol"))
	for who, words := range map[string]string{
		"bob":                "you are not a reviewer of this",
		"999999999999/carol": "review-decision did not accept your identity",
	} {
		c := startLocalConsole(t, e, who)
		_, page := c.do(http.MethodGet, c.origin+"/reviews/"+r.ID, nil)
		csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
		if csrf == nil {
			// Refused already when shown: in words, never the input.
			if !strings.Contains(page, words) || strings.Contains(page, "Weekly digest") || strings.Contains(page, "digest changed") {
				t.Errorf("%s: the review page %q; want it refused saying %q", who, page, words)
			}
			continue
		}
		form := url.Values{"csrf": {csrf[1]}, "digest": {r.InputDigest}, "decision": {"approve"}}
		resp, body := c.do(http.MethodPost, c.origin+"/reviews/"+r.ID+"/decide", form)
		if resp.StatusCode < 400 || !strings.Contains(body, `id="refusal"`) || !strings.Contains(body, words) {
			t.Errorf("%s approves: %d; want a refusal saying %q:\n%s", who, resp.StatusCode, words, body)
		}
	}
	if calls := e.sfn.Calls("token-console-outsiders"); len(calls) != 0 {
		t.Fatalf("an outsider's decision reached Step Functions: %+v", calls)
	}
	c := startLocalConsole(t, e, "carol")
	_, page := c.do(http.MethodGet, c.origin+"/reviews/"+r.ID, nil)
	form := url.Values{"csrf": {regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)[1]}, "digest": {r.InputDigest}, "decision": {"approve"}}
	if resp, body := c.do(http.MethodPost, c.origin+"/reviews/"+r.ID+"/decide", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("carol approves: %d %s", resp.StatusCode, body)
	}
	// The console's log names requests, never the input they showed.
	for _, v := range []string{"Weekly digest", "Three items", "team@example.com"} {
		if strings.Contains(c.stderr(), v) {
			t.Fatalf("the console's log holds the input's %q: %s", v, c.stderr())
		}
	}
}

// consoleRequest is a request to the console at target as the console's
// own page makes it: a same-origin navigation, with form as a POST's
// body (and origin as its Origin), and the session cookie when one is
// given.
func consoleRequest(t *testing.T, method, target, origin string, form url.Values, cookie string) *http.Request {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Dest", "document")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: sessionCookieName(t, target), Value: cookie})
	}
	return req
}
