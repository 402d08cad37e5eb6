package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

// sourceSecret stands for a secret the sources function draws, and
// givenSecret for one an operator pipes to --secret-from-stdin.
const (
	sourceSecret = "whsec_ZHJhd24tc2VjcmV0LW9mLXRoZS1zb3VyY2VzLWZu"
	givenSecret  = "whsec_GivenStripeSecret0123456789"
)

// sourcesFake stands in for the sources function's Function URL: a fake,
// since these tests check only what the CLI sends and prints (the
// function is tested in functions/sources/sources, and through the CLI on
// the local stack in infra/local/stack). It records each request and
// answers with fixed results.
type sourcesFake struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []sourcesRecorded
}

type sourcesRecorded struct {
	method, path string
	body         []byte
	binding      string // the proof's X-Toolgate-Binding value, from its signed query
}

func newSourcesFake(t *testing.T) *sourcesFake {
	f := &sourcesFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, sourcesRecorded{r.Method, r.URL.Path, raw, r.Header.Get(inboundapi.ProofHeader)})
		f.mu.Unlock()
		src := inboundapi.SourceInfo{Name: "billing", Scheme: "standard-webhooks", Solution: "refunds", MaxBodyBytes: 65536, Route: "/in/billing",
			AddedBy: "arn:aws:iam::000000000000:user/ops", AddedAt: "2026-12-03T17:00:00Z", Version: 1, Secrets: 1}
		sc := inboundapi.ScheduleInfo{Name: "nightly", Solution: "digest", Expression: "cron(0 18 * * ? *)", State: "ENABLED", InputBytes: 2,
			AddedBy: "arn:aws:iam::000000000000:user/ops", AddedAt: "2026-12-03T17:00:00Z", Version: 1}
		var res any
		switch {
		case r.URL.Path == inboundapi.PathSources && r.Method == http.MethodPost:
			var b inboundapi.AddSourceRequest
			_ = json.Unmarshal(raw, &b)
			out := inboundapi.AddSourceResult{Source: src}
			if b.Secret == "" {
				out.Secret = sourceSecret
			}
			res = out
		case r.URL.Path == inboundapi.PathSources:
			res = inboundapi.ListSourcesResult{Sources: []inboundapi.SourceInfo{src}}
		case strings.HasSuffix(r.URL.Path, "/rotate-secret"):
			var b inboundapi.RotateSecretRequest
			_ = json.Unmarshal(raw, &b)
			out := inboundapi.RotateSecretResult{Source: "billing", PreviousRetiresAt: "2026-12-04T17:00:00Z"}
			if b.Secret == "" {
				out.Secret = sourceSecret
			}
			res = out
		case strings.HasSuffix(r.URL.Path, "/retire-secrets"):
			res = inboundapi.RetireSecretsResult{Source: "billing", Retired: 1}
		case strings.HasSuffix(r.URL.Path, "/remove"):
			res = inboundapi.RemoveResult{Name: "billing", Removed: true}
		case r.URL.Path == inboundapi.PathSchedules && r.Method == http.MethodPost:
			res = inboundapi.AddScheduleResult{Schedule: sc}
		case r.URL.Path == inboundapi.PathSchedules:
			res = inboundapi.ListSchedulesResult{Schedules: []inboundapi.ScheduleInfo{sc}}
		case strings.HasSuffix(r.URL.Path, "/pause"):
			res = inboundapi.ScheduleStateResult{Schedule: "nightly", State: "PAUSED", Changed: true}
		case strings.HasSuffix(r.URL.Path, "/resume"):
			res = inboundapi.ScheduleStateResult{Schedule: "nightly", State: "ENABLED"}
		case r.URL.Path == inboundapi.PathDLQ:
			m := inboundapi.DLQMessage{Message: inboundapi.FiringMessage("nightly", mustTime("2026-12-03T18:00:00Z")), ReceiveCount: 5}
			res = inboundapi.DLQResult{Messages: []inboundapi.DLQMessage{m, {Message: inboundapi.SourceMessage("billing", "evt_1"), ReceiveCount: 5}}}
		default:
			res = inboundapi.RedriveResult{Moved: 2}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// A drawn secret is printed exactly once, on standard output, never on
// standard error: at add and at rotate-secret.
func TestSourceDrawnSecretIsPrintedOnceToStandardOutput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		path string
	}{
		{[]string{"webhooks", "source", "add", "--name", "billing", "--scheme", "standard-webhooks", "--solution", "refunds"}, "/sources"},
		{[]string{"webhooks", "source", "rotate-secret", "--name", "billing"}, "/sources/billing/rotate-secret"},
	} {
		t.Run(c.args[2], func(t *testing.T) {
			t.Parallel()
			f := newSourcesFake(t)
			code, stdout, stderr := runWithStdin(nil, append(c.args, "--function-url", f.srv.URL)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if n := strings.Count(stdout, sourceSecret); n != 1 || strings.Contains(stderr, sourceSecret) {
				t.Fatalf("the secret is %d times on stdout %q, stderr %q", n, stdout, stderr)
			}
			if len(f.reqs) != 1 || f.reqs[0].method != http.MethodPost || f.reqs[0].path != c.path || f.reqs[0].binding == "" {
				t.Fatalf("requests %+v", f.reqs)
			}
		})
	}
}

// A secret piped to --secret-from-stdin (one trailing newline left out)
// goes to the function in the request's body and is printed nowhere.
func TestSourceSecretFromStdinIsSentAndNeverPrinted(t *testing.T) {
	t.Parallel()
	f := newSourcesFake(t)
	code, stdout, stderr := runWithStdin(strings.NewReader(givenSecret+"\n"), "webhooks", "source", "add", "--name", "billing", "--scheme", "stripe",
		"--solution", "refunds", "--max-body-bytes", "1000", "--end-user", "cust-1", "--secret-from-stdin", "--function-url", f.srv.URL)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout+stderr, givenSecret) || strings.Contains(stdout, "shown once") {
		t.Fatalf("printed the secret or a secret line: stdout %q, stderr %q", stdout, stderr)
	}
	var b inboundapi.AddSourceRequest
	if len(f.reqs) != 1 || json.Unmarshal(f.reqs[0].body, &b) != nil {
		t.Fatalf("requests %+v", f.reqs)
	}
	if want := (inboundapi.AddSourceRequest{Name: "billing", Scheme: "stripe", Solution: "refunds", MaxBodyBytes: 1000, EndUser: "cust-1", Secret: givenSecret}); b != want {
		t.Fatalf("body %+v, want %+v", b, want)
	}
}

// Bad command lines exit 2 naming the flag at fault, and send nothing;
// an argument after the flags (perhaps a secret typed there) is not
// echoed.
func TestSourceAndScheduleMisuseNamesTheFlag(t *testing.T) {
	t.Parallel()
	input := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(input, []byte(`{"a": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(notJSON, []byte(`{"a": `), 0o600); err != nil {
		t.Fatal(err)
	}
	null := filepath.Join(t.TempDir(), "null.json")
	if err := os.WriteFile(null, []byte(" null\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	add := []string{"webhooks", "source", "add", "--scheme", "github", "--solution", "refunds"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no name", add, "--name"},
		{"a bad name", append(add, "--name", "Billing_1"), "--name"},
		{"an unknown scheme", []string{"webhooks", "source", "add", "--name", "b", "--scheme", "svix", "--solution", "s"}, "--scheme"},
		{"no Solution", []string{"webhooks", "source", "add", "--name", "b", "--scheme", "github"}, "--solution"},
		{"a body bound over the cap", append(add, "--name", "b", "--max-body-bytes", "204801"), "--max-body-bytes"},
		{"a body bound of 0 given", append(add, "--name", "b", "--max-body-bytes", "0"), "--max-body-bytes"},
		{"stripe without its secret", []string{"webhooks", "source", "add", "--name", "b", "--scheme", "stripe", "--solution", "s"}, "--secret-from-stdin"},
		{"a secret as an argument", append(add, "--name", "b", "whsec_typed-here"), "not shown"},
		{"rotate without a name", []string{"webhooks", "source", "rotate-secret"}, "--name"},
		{"schedule with two expressions", []string{"schedule", "add", "--name", "n", "--solution", "s", "--cron", "0 18 * * ? *", "--rate", "1 day", "--input", input}, "--cron EXPR or --rate EXPR"},
		{"schedule without an expression", []string{"schedule", "add", "--name", "n", "--solution", "s", "--input", input}, "--cron EXPR or --rate EXPR"},
		{"schedule without input", []string{"schedule", "add", "--name", "n", "--solution", "s", "--rate", "1 day"}, "--input"},
		{"schedule input not JSON", []string{"schedule", "add", "--name", "n", "--solution", "s", "--rate", "1 day", "--input", notJSON}, "--input"},
		{"schedule input null", []string{"schedule", "add", "--name", "n", "--solution", "s", "--rate", "1 day", "--input", null}, "--input"},
		{"pause a bad name", []string{"schedule", "pause", "--name", "-x"}, "--name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newSourcesFake(t)
			code, stdout, stderr := runWithStdin(nil, append(c.args, "--function-url", f.srv.URL)...)
			if code != ExitMisuse || stdout != "" || !strings.Contains(stderr, c.want) || len(f.reqs) != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q, %d requests; want %d naming %q", code, stdout, stderr, len(f.reqs), ExitMisuse, c.want)
			}
			if strings.Contains(stderr, "whsec_typed-here") {
				t.Fatalf("the argument is echoed: %s", stderr)
			}
		})
	}
}

// schedule add wraps a bare --cron or --rate expression, sends the input
// file's JSON compacted, and prints the schedule; list, pause, resume
// and remove reach their routes; the listing shows no input.
func TestScheduleCommandsReachTheirRoutes(t *testing.T) {
	t.Parallel()
	input := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(input, []byte("{\n  \"report\": \"daily\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newSourcesFake(t)
	for _, c := range []struct {
		args       []string
		path, want string
	}{
		{[]string{"add", "--name", "nightly", "--solution", "digest", "--cron", "0 18 * * ? *", "--input", input, "--end-user", "cust-1"}, "/schedules", "nightly ENABLED cron(0 18 * * ? *) solution digest input 2 bytes"},
		{[]string{"list"}, "/schedules", "nightly ENABLED"},
		{[]string{"pause", "--name", "nightly"}, "/schedules/nightly/pause", "schedule nightly is PAUSED"},
		{[]string{"resume", "--name", "nightly"}, "/schedules/nightly/resume", "was ENABLED already"},
		{[]string{"remove", "--name", "nightly"}, "/schedules/nightly/remove", "removed schedule"},
	} {
		code, stdout, stderr := runWithStdin(nil, append(append([]string{"schedule"}, c.args...), "--function-url", f.srv.URL)...)
		if code != ExitOK || !strings.Contains(stdout, c.want) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
		if last := f.reqs[len(f.reqs)-1]; last.path != c.path || last.binding == "" {
			t.Fatalf("%v: request %+v, want %s with a proof", c.args, last, c.path)
		}
	}
	var b inboundapi.AddScheduleRequest
	if err := json.Unmarshal(f.reqs[0].body, &b); err != nil {
		t.Fatal(err)
	}
	if b.Expression != "cron(0 18 * * ? *)" || string(b.Input) != `{"report":"daily"}` || b.EndUser != "cust-1" || b.Solution != "digest" {
		t.Fatalf("add sent %+v (input %s)", b, b.Input)
	}
	code, _, stderr := runWithStdin(nil, "schedule", "add", "--name", "hourly", "--solution", "digest", "--rate", "rate(1 hour)", "--input", input, "--function-url", f.srv.URL)
	if code != ExitOK || json.Unmarshal(f.reqs[len(f.reqs)-1].body, &b) != nil || b.Expression != "rate(1 hour)" {
		t.Fatalf("exit %d (%s): sent %+v", code, stderr, b)
	}
}

// retire-secrets, remove and the dead-letter queue commands print what
// the function answered.
func TestSourceManageAndDLQCommandsPrintTheAnswer(t *testing.T) {
	t.Parallel()
	f := newSourcesFake(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"list"}, []string{"billing standard-webhooks solution refunds max body 65536 bytes", "1 secret(s)"}},
		{[]string{"retire-secrets", "--name", "billing"}, []string{"retired 1 secret(s) of billing"}},
		{[]string{"remove", "--name", "billing"}, []string{"removed source billing"}},
		{[]string{"dlq", "list"}, []string{"schedule nightly firing 2026-12-03T18:00:00Z: 5 attempt(s)", "source billing event evt_1: 5 attempt(s)"}},
		{[]string{"dlq", "redrive"}, []string{"moved 2 message(s) back"}},
	} {
		code, stdout, stderr := runWithStdin(nil, append(append([]string{"webhooks", "source"}, c.args...), "--function-url", f.srv.URL)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: stdout %q lacks %q", c.args, stdout, w)
			}
		}
	}
}

// mustTime is an RFC 3339 time of the tests.
func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
