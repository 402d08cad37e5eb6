package stack_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// canaryToolset declares auth on both kinds of target: the MCP server
// that requires bearer tokens (Stack.MCPAuth), whose send_sms gives up
// after 2 s, and the recording HTTP service as an exact http host entry
// over plain http.
const canaryToolset = `toolset: NAME
tools:
  crm:
    mcp: MCPURL
    admit: [lookup_customer, send_sms]
    auth: {header: Authorization, scheme: Bearer}
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true}
      send_sms: {timeout_seconds: 2}
  http:
    hosts:
      - host: "HTTPHOST"
        methods: [GET]
        auth: {header: Authorization, scheme: Bearer, origin_scheme: http}
`

// canaryBoth looks a customer up over MCP, then reads a path of the
// recording service, keeping what it answered: each call presents its
// target's credential.
const canaryBoth = `solution: NAME
version: 1
toolset: TOOLSET
input:
  type: object
  required: [customer_id, path]
  properties:
    customer_id: {type: string, pattern: "^C-[0-9]+$"}
    path: {type: string, pattern: "^[a-z0-9-]{1,60}$"}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
    next: read
  - id: read
    tool: http
    with:
      method: GET
      url: "http://HTTPHOST/canary/${input.path}"
    retry: {max_attempts: 1}
    keep: [status, data]
`

// canarySMS sends an SMS over MCP, whose answer the tests hold back past
// its 2 s.
const canarySMS = `solution: NAME
version: 1
toolset: TOOLSET
input:
  type: object
  required: [text]
  properties:
    text: {type: string, minLength: 1, maxLength: 160}
steps:
  - id: sms
    tool: crm.send_sms
    with: {to: "+15550100", text: "${input.text}"}
`

// newCanary is a secret no other test holds: 40 lower-case hex digits
// (a b64token, RFC 6750 §2.1).
func newCanary(t *testing.T) string {
	t.Helper()
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// canaryForm is one way a secret may be written where it leaked.
type canaryForm struct {
	how, text string
}

// canaryForms are the ways a canary may appear where it leaked: as is,
// after its scheme ("Bearer <canary>"), its first and last 16 characters
// (a copy cut short, as an excerpt cuts a server's text), and base64 in
// the standard and URL alphabets at each of the three alignments it may
// have inside longer bytes (a DynamoDB binary attribute, a []byte
// marshalled to JSON): for each, the characters of the encoding that
// depend on the canary's bytes alone.
func canaryForms(canary string) []canaryForm {
	forms := []canaryForm{{"raw", canary}, {"as Bearer", "Bearer " + canary},
		{"its first 16 characters", canary[:16]}, {"its last 16 characters", canary[len(canary)-16:]}}
	for k := range 3 {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), canary...))
		from, to := (8*k+5)/6, 8*(k+len(canary))/6
		std := enc[from:to]
		forms = append(forms, canaryForm{fmt.Sprintf("base64 at offset %d", k), std},
			canaryForm{fmt.Sprintf("base64url at offset %d", k), strings.NewReplacer("+", "-", "/", "_").Replace(std)})
	}
	return forms
}

// canaryFind reports where in text a form of a canary of canaries is:
// the canary's name, the form and an excerpt around it; "" when none is.
func canaryFind(text string, canaries map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(canaries)) {
		for _, f := range canaryForms(canaries[name]) {
			if i := strings.Index(text, f.text); i >= 0 {
				return fmt.Sprintf("the %s canary (%s): …%s…", name, f.how, text[max(0, i-300):min(len(text), i+len(f.text)+100)])
			}
		}
	}
	return ""
}

// start is runAs with input marshalled to JSON.
func (c *credEnv) start(t *testing.T, solution string, input any, as, name, endUser string) string {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := c.runAs(t, solution, string(b), as, name, endUser)
	return run
}

// executionARN is the ARN of Solution solution's execution called name.
func executionARN(solution, name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, solution), name)
}

// The canary search finds each form it looks for where it was planted:
// in a JSON string, inside base64 bytes at each alignment, after its
// scheme and cut short; and finds nothing in text without one.
func TestCanarySearchFindsAPlantedCanary(t *testing.T) {
	canary := newCanary(t)
	other := map[string]string{"planted": canary}
	for _, c := range []struct{ name, text string }{
		{"in a JSON string", `{"message":"refused ` + canary + `"}`},
		{"after its scheme", `Authorization: Bearer ` + canary},
		{"cut short, as an excerpt cuts", "the server said " + canary[:20] + "…"},
		{"its tail after a cut", "…" + canary[15:]},
	} {
		if canaryFind(c.text, other) == "" {
			t.Errorf("%s: not found in %q", c.name, c.text)
		}
	}
	for k := range 3 {
		b, _ := json.Marshal(map[string][]byte{"ct": append(append(bytes.Repeat([]byte{0x5a}, k), canary...), 0x01, 0x02)})
		if canaryFind(string(b), other) == "" {
			t.Errorf("base64 at offset %d: not found in %s", k, b)
		}
		u := base64.URLEncoding.EncodeToString(append(bytes.Repeat([]byte{0xfb}, k+3), canary...))
		if canaryFind(u, other) == "" {
			t.Errorf("base64url at offset %d: not found in %s", k, u)
		}
	}
	if got := canaryFind(`{"message":"refused …","hash":"`+authorizationDigest(canary)+`"}`, other); got != "" {
		t.Errorf("found %s in text without the canary", got)
	}
}

// A canary secret in each scope (the toolset's, an end user's, a run's)
// for an MCP server and an http host entry, presented by runs that
// succeed, fail on a 500 whose body echoes the Authorization header, fail
// on an isError text quoting it back, time out, and park (an expired
// credential; a 401 invalid_token): no form of any canary is in a ledger
// item (the credential items hold it only sealed, which the test opens
// through local-kms to prove it is there), a function's log, an execution
// history, a span, a run's error or cause, the CLI's output, or the MCP
// servers' recorded call arguments and _meta (docs/credentials.md).
func TestCanaryCredentialsAreNeverRecorded(t *testing.T) {
	e := sharedEnv(t)
	c := &credEnv{env: e, dir: t.TempDir()}
	name := fresh("canary-creds")
	srv, rec := e.st.MCPAuth, e.st.HTTP
	httpHost := rec.Host()
	endUser := fresh("customer-canary")

	// The canaries, by scope and target; expired is set to lapse before
	// its run, invalid is one the MCP server does not accept, and refused
	// is not a b64token (it holds a space), which set refuses.
	canaries := map[string]string{
		"toolset crm": newCanary(t), "toolset http": newCanary(t),
		"end-user crm": newCanary(t), "end-user http": newCanary(t),
		"run crm": newCanary(t), "run http": newCanary(t),
		"expired run crm": newCanary(t), "invalid run crm": newCanary(t),
		"refused": newCanary(t)[:20] + " " + newCanary(t)[:20],
	}
	// sealedAs is the scope kind and target of each canary's item ("":
	// none); notSent are those never presented.
	sealedAs := map[string]string{
		"toolset crm": "toolset crm", "toolset http": "toolset " + httpHost,
		"end-user crm": "end_user crm", "end-user http": "end_user " + httpHost,
		"run crm": "run crm", "run http": "run " + httpHost,
		"expired run crm": "run crm", "invalid run crm": "run crm",
	}
	notSent := map[string]bool{"expired run crm": true, "refused": true}
	srv.SetBearerTokens(canaries["toolset crm"], canaries["end-user crm"], canaries["run crm"])
	seenMCP, seenHTTP := len(srv.Requests()), len(rec.Requests())
	seenCalls := len(srv.Calls())

	dir := filepath.Join(e.dir, "toolsets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	toolsetFile := filepath.Join(dir, name+".yaml")
	src := strings.NewReplacer("NAME", name, "MCPURL", srv.URL(), "HTTPHOST", httpHost).Replace(canaryToolset)
	if err := os.WriteFile(toolsetFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server needs its credential to be listed: the toolset's is set
	// from the draft, before the registration that lists with it.
	c.set(t, stack.CredentialAdmin, name, "crm", canaries["toolset crm"], "--draft", toolsetFile)
	if out := c.must(t, "toolset", "register", toolsetFile, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher); !strings.Contains(out, "registered ts_") {
		t.Fatalf("register %s:\n%s", toolsetFile, out)
	}
	id := lockID(t, strings.TrimSuffix(toolsetFile, ".yaml")+".lock.json")
	// Registered after crm's credential was set: an admin allows it.
	c.must(t, "credentials", "allow", "--toolset", id, "--function-endpoint", e.st.Endpoints["publish"], "--as", stack.CredentialAdmin)
	c.set(t, stack.CredentialAdmin, name, httpHost, canaries["toolset http"])
	c.set(t, "demo", name, "crm", canaries["end-user crm"], "--end-user", endUser)
	c.set(t, "demo", name, httpHost, canaries["end-user http"], "--end-user", endUser)
	// A secret set refuses: its refusal must not quote it either.
	refused := filepath.Join(e.dir, fresh("secret"))
	if err := os.WriteFile(refused, []byte(canaries["refused"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := c.run(t, "credentials", "set", "--toolset", name, "--target", "crm", "--origin", "http://"+hostOfURL(e.st.MCPAuth.URL()), "--from-file", refused,
		"--function-endpoint", e.st.Endpoints["publish"], "--as", stack.CredentialAdmin); code == cli.ExitOK {
		t.Fatalf("a secret that is not a b64token was set for a Bearer scheme:\n%s", out)
	}
	c.must(t, "credentials", "list", "--toolset", name, "--function-endpoint", e.st.Endpoints["publish"], "--as", stack.CredentialAdmin)

	both, sms := name+"-both", name+"-sms"
	for solution, text := range map[string]string{both: canaryBoth, sms: canarySMS} {
		file := filepath.Join(dir, solution+".yaml")
		src := strings.NewReplacer("NAME", solution, "TOOLSET", id, "HTTPHOST", httpHost).Replace(text)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		c.must(t, "publish", file, "--toolsets", dir, "--endpoint", e.st.Endpoints["publish"], "--as", publisher)
	}

	// The expired credential is set first, to lapse while the others run.
	expiredName := fresh("canary-expired")
	expiresAt := time.Now().Add(5 * time.Second).Truncate(time.Second)
	c.set(t, starter, name, "crm", canaries["expired run crm"], "--run", executionARN(both, expiredName), "--expires-at", expiresAt.UTC().Format(time.RFC3339))

	type ran struct {
		run, what string
		out       *runner.Outcome
	}
	var runs []ran
	follow := func(t *testing.T, run, what, status string, code tool.Code) *runner.Outcome {
		t.Helper()
		out, _ := e.follow(t, run)
		runs = append(runs, ran{run, what, out})
		if out.Status != status || (code != "" && out.Error != string(code)) {
			t.Fatalf("%s: run %s %s %s %s, want %s %s", what, run, out.Status, out.Error, out.Cause, status, code)
		}
		return out
	}
	// read scripts the recording service's answer to a run's read: 200 or
	// 500 with every request header echoed in the body, Authorization
	// included.
	read := func(status int) string {
		p := fresh("echo")
		rec.Script("/canary/"+p, httprecorder.Answer{Status: status, EchoHeaders: true})
		return p
	}
	input := func(path string) map[string]string { return map[string]string{"customer_id": "C-1", "path": path} }

	// Each scope: a run that succeeds, its read answered 200 with the
	// echo as data, and one whose read is answered 500 with the echo.
	for _, status := range []int{http.StatusOK, http.StatusInternalServerError} {
		want, code := "SUCCEEDED", tool.Code("")
		if status != http.StatusOK {
			want, code = "FAILED", tool.UpstreamUnavailable
		}
		run := c.start(t, both, input(read(status)), starter, "", "")
		follow(t, run, fmt.Sprintf("toolset scope, read answered %d", status), want, code)

		run = c.start(t, both, input(read(status)), "demo", "", endUser)
		follow(t, run, fmt.Sprintf("end-user scope, read answered %d", status), want, code)

		runName := fresh("canary-run")
		c.set(t, starter, name, "crm", canaries["run crm"], "--run", executionARN(both, runName))
		c.set(t, starter, name, httpHost, canaries["run http"], "--run", executionARN(both, runName))
		run = c.start(t, both, input(read(status)), starter, runName, "")
		follow(t, run, fmt.Sprintf("run scope, read answered %d", status), want, code)
	}

	// A server that quotes the credential back in an isError text, long
	// enough that an excerpt of it cuts the credential short.
	quoted := strings.Repeat("the token you sent was refused; ", 5) + "Authorization: Bearer " + canaries["toolset crm"]
	if err := srv.FailCalls(mcpserver.LookupCustomer, quoted, 1); err != nil {
		t.Fatal(err)
	}
	follow(t, c.start(t, both, input(fresh("unread")), starter, "", ""), "an isError quoting the credential", "FAILED", tool.PermanentFailure)

	// A call held past its timeout.
	ended, err := srv.Delay(mcpserver.SendSMS, 30*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	follow(t, c.start(t, sms, map[string]string{"text": "canary"}, starter, "", ""), "send_sms past its timeout", "FAILED", tool.Timeout)
	select {
	case <-ended:
	case <-time.After(30 * time.Second): // a bound, never reached when the test passes
		t.Fatal("the server's delay did not end")
	}

	// A credential the server refuses with 401 invalid_token.
	invalidName := fresh("canary-invalid")
	c.set(t, starter, name, "crm", canaries["invalid run crm"], "--run", executionARN(both, invalidName))
	// The run waits in its park, before the claim or after it
	// (endRefusedCall ends it); its outcome is searched as the others'.
	parkedRun := func(t *testing.T, run, what string) {
		t.Helper()
		_, out, _ := e.endRefusedCall(t, run, "lookup", "crm.lookup_customer")
		runs = append(runs, ran{run, what, out})
	}
	parkedRun(t, c.start(t, both, input(fresh("unread")), starter, invalidName, ""), "a 401 invalid_token")

	// The expired credential, once its time has passed: the wall clock is
	// what the dispatcher compares it with.
	if wait := time.Until(expiresAt); wait > 0 {
		time.Sleep(wait + 100*time.Millisecond)
	}
	expiredRun := c.start(t, both, input(fresh("unread")), starter, expiredName, "")
	expiredPark, _ := e.awaitParked(t, expiredRun, "lookup")
	if strings.Contains(fmt.Sprintf("%+v", expiredPark), canaries["expired run crm"]) {
		t.Fatal("the park holds the expired credential")
	}
	e.stopParked(t, expiredRun, expiredPark)
	out, _ := e.follow(t, expiredRun)
	runs = append(runs, ran{expiredRun, "an expired credential", out})

	// What was sent: every canary but the expired one reached its target,
	// so each went through the functions that must not record it.
	presented := map[string]int{}
	for _, r := range srv.Requests()[seenMCP:] {
		for n, v := range canaries {
			if r.Header.Get("Authorization") == "Bearer "+v {
				presented[n]++
			}
		}
	}
	for _, r := range rec.Requests()[seenHTTP:] {
		for n, v := range canaries {
			if r.AuthorizationSHA256 == authorizationDigest(v) && strings.HasPrefix(r.Path, "/canary/") {
				presented[n]++
				if r.Status != http.StatusOK && r.Status != http.StatusInternalServerError {
					t.Errorf("the recording service answered %s's read %d, want the scripted echo", n, r.Status)
				}
			}
		}
	}
	for n := range canaries {
		if got := presented[n]; (got == 0) != notSent[n] {
			t.Errorf("the %s canary was presented %d times: want it presented, but for the expired and the refused ones", n, got)
		}
	}
	// The echo is what the service says it is: a 500 whose body holds the
	// Authorization header as sent.
	probe := newCanary(t)
	p := read(http.StatusInternalServerError)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, rec.URL()+"/canary/"+p, nil)
	req.Header.Set("Authorization", "Bearer "+probe)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "Bearer "+probe) {
		t.Fatalf("the echo answered %d %s: not the header it was sent", resp.StatusCode, body)
	}

	// The places searched.
	places := map[string]string{}
	var runIDs []string
	for _, r := range runs {
		runIDs = append(runIDs, r.run)
	}

	// The ledger table, every item; the credential items hold ciphertext,
	// which is opened here through local-kms to prove each canary is there.
	var table bytes.Buffer
	opened := map[string]string{}
	for _, raw := range tableItems(t, e.st) {
		var it map[string]any
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(it)
		table.Write(append(b, '\n'))
		var ci struct {
			PK         string `dynamodbav:"pk"`
			SK         string `dynamodbav:"sk"`
			CT         []byte `dynamodbav:"ct"`
			Nonce      []byte `dynamodbav:"nonce"`
			EDK        []byte `dynamodbav:"edk"`
			KeyID      string `dynamodbav:"key_id"`
			SetBy      string `dynamodbav:"set_by"`
			Executions string `dynamodbav:"execution_arn"`
		}
		if err := attributevalue.UnmarshalMap(raw, &ci); err != nil || ci.PK != "CRED#"+name || !strings.Contains(ci.SK, "#SCOPE#") {
			continue
		}
		parts := strings.SplitN(ci.SK, "#", 4)
		// The toolset's auth of each target, which the ciphertext is
		// bound to beside the encryption context.
		auth := toolset.Auth{Header: "Authorization", Scheme: "Bearer"}
		if parts[0] != "crm" {
			auth.OriginScheme = "http"
		}
		target := credential.Target{ToolsetName: name, Name: parts[0], Origin: parts[1], Auth: auth}
		secret, err := vault.Open(t.Context(), e.st.KMS.Client(), target, credential.Scope(parts[3]),
			vault.Sealed{Ciphertext: ci.CT, Nonce: ci.Nonce, EncryptedKey: ci.EDK, KeyID: ci.KeyID})
		if err != nil {
			t.Fatalf("the credential item %s does not open: %v", ci.SK, err)
		}
		opened[string(secret)] = credential.Scope(parts[3]).Kind() + " " + parts[0]
	}
	for n, v := range canaries {
		if got, want := opened[v], sealedAs[n]; got != want {
			t.Errorf("the %s canary opens from the table as %q, want from a %q item", n, got, want)
		}
	}
	for _, run := range runIDs {
		if !strings.Contains(table.String(), run) {
			t.Fatalf("the ledger table holds no item of %s: not this stack's table", run)
		}
	}
	places["the ledger table's items"] = table.String()

	// Every function's output: each process's tail, which must reach back
	// to this test's first run in mcp-call's and http's.
	for _, fn := range []string{"mcp-call", "http"} {
		if _, own := functionLogs(e.st, fn); !strings.Contains(own, runIDs[0]) {
			t.Fatalf("%s's logs do not reach back to the first run %s:\n%.2000s", fn, runIDs[0], own)
		}
	}
	places["the functions' logs"], _ = functionLogs(e.st, "")

	// Every execution's history, whole.
	var history bytes.Buffer
	for _, run := range runIDs {
		pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(page.Events)
			history.Write(b)
		}
	}
	// Not vacuous: a read answered 200 kept the echo as its data, the
	// Authorization header among it (redacted).
	if out := e.taskOutput(t, runIDs[0], "read"); !strings.Contains(out, "Authorization") {
		t.Errorf("the first run's read kept %s: not the echo of its headers", out)
	}
	places["the executions' histories"] = history.String()

	// Every span the receiver holds; this test's runs' traces among them.
	var spans bytes.Buffer
	for _, s := range e.st.Traces.Spans() {
		b, _ := json.Marshal(s)
		fmt.Fprintf(&spans, "%s %+v\n", b, s)
	}
	for _, r := range runs {
		if len(e.st.Traces.Trace(e.runTraceID(t, r.run))) == 0 {
			t.Errorf("no span of %s's trace: the spans searched are not its", r.what)
		}
	}
	places["the exported spans"] = spans.String()

	// Every run's error and cause.
	var failures bytes.Buffer
	for _, r := range runs {
		fmt.Fprintf(&failures, "%s: %s %s %s\n", r.what, r.out.Status, r.out.Error, r.out.Cause)
	}
	places["the runs' errors and causes"] = failures.String()
	places["the CLI's output"] = c.printed.String()

	// What the MCP servers recorded of each call: its arguments, _meta
	// and trace context (the headers, which carry the credential to the
	// server, are not recorded there).
	var calls bytes.Buffer
	for _, s := range []*mcpserver.Server{srv, e.st.MCP} {
		for _, call := range s.Calls() {
			b, _ := json.Marshal(call)
			calls.Write(append(b, '\n'))
		}
	}
	if len(srv.Calls()) == seenCalls {
		t.Fatal("the MCP server recorded no call of this test's runs")
	}
	places["the MCP servers' recorded calls"] = calls.String()

	for _, where := range slices.Sorted(maps.Keys(places)) {
		if got := canaryFind(places[where], canaries); got != "" {
			t.Errorf("%s hold %s", where, got)
		}
	}
}

// functionLogs is every process's output on the stack (each one's
// stdout and stderr under its name), the place a canary test searches
// for what must never be logged, and fn's own output: every instance of
// function fn under the RIE ("rie:<fn>" and "rie:<fn>:<lane>"), which the
// test checks names its runs, so that the logs searched are this test's.
func functionLogs(st *stack.Stack, fn string) (all, own string) {
	var logs, mine strings.Builder
	for _, p := range st.Processes() {
		fmt.Fprintf(&logs, "== %s stdout\n%s\n== %s stderr\n%s\n", p.Name, p.Stdout(), p.Name, p.Stderr())
		if p.Name == "rie:"+fn || strings.HasPrefix(p.Name, "rie:"+fn+":") {
			mine.WriteString(p.Stdout() + p.Stderr())
		}
	}
	return logs.String(), mine.String()
}

// tableItems is every item of the stack's ledger table (a Scan to its
// last page), where a canary test looks for what must never be recorded.
func tableItems(t *testing.T, st *stack.Stack) []map[string]dynamodbtypes.AttributeValue {
	t.Helper()
	var items []map[string]dynamodbtypes.AttributeValue
	scan := dynamodb.NewScanPaginator(local.DynamoDB(st.Dynamo.Endpoint()), &dynamodb.ScanInput{TableName: aws.String(stack.Table)})
	for scan.HasMorePages() {
		page, err := scan.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Items...)
	}
	return items
}
