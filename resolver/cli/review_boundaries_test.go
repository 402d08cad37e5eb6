package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/toolset"
)

// send-email is gated by the catalog, and "a Solution can add a tool [to
// the review list], never remove one". But the dispatcher reads
// review_required only from the pinned toolset, and nothing checks a
// registered toolset against the catalog: a toolset written by hand with
// send-email's review_required false (its id recomputed, so it parses) is
// registered by `toolgate toolset register`, and `toolgate invoke
// send-email --toolset` with it sends an e-mail that no person reviewed.
// (A publisher may also create a state machine calling send-email with
// that toolset id.)
func TestHandMadeToolsetCannotUngateSendEmail(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := ts.Tools["send-email"]
	if !tool.ReviewRequired {
		t.Fatal("the catalog no longer gates send-email")
	}
	tool.ReviewRequired = false
	ts.Tools["send-email"] = tool
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	doc, _ := ts.MarshalIndent()
	dir := t.TempDir()
	file := filepath.Join(dir, "ungated.toolset.json")
	os.WriteFile(file, doc, 0o644)
	code, out, errs := run(append([]string{"toolset", "register"}, append(flags, file)...)...)
	if code != ExitOK {
		return // refused: the catalog's review list cannot be shortened
	}
	t.Logf("toolset register accepted a toolset that does not gate send-email: %s", out+errs)

	ses := localtest.SES(t)
	send := localtest.RIE(t, "send-email", localtest.Bootstrap(t, "../../functions/send-email"), 30*time.Second, map[string]string{
		dispatch.EnvTable: store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": flags[1],
		"TOOLGATE_SENDER": "noreply@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com", "AWS_ENDPOINT_URL_SESV2": ses.Endpoint(),
	})
	input := filepath.Join(dir, "mail.json")
	os.WriteFile(input, []byte(`{"to":["team@example.com"],"subject":"Unreviewed","text":"nobody approved this"}`), 0o644)
	code, out, errs = run("invoke", "send-email", "--input", input, "--toolset", ts.ID, "--endpoint", send.Endpoint(),
		"--dynamodb-endpoint", flags[1], "--table", store.Table(), "--wait-timeout", "1s")
	resp, err := http.Get(ses.Endpoint() + "/store")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Emails []struct{ Subject string } }
	json.NewDecoder(resp.Body).Decode(&got)
	if len(got.Emails) != 0 {
		t.Fatalf("send-email sent %d e-mail(s) without any review (invoke exit %d):\n%s%s", len(got.Emails), code, out, errs)
	}
}

// Reviewer patterns the resolver accepts must be patterns review-request
// accepts: otherwise the Solution compiles and publishes, and every run
// fails at its review Task (TOOL_INPUT_INVALID, then <review>-failed).
// reviewer.CheckPattern says it validates "as the resolver does", and
// docs/reviews.md says review-request takes "≤ 100 patterns, each arn:…
// without whitespace, as the resolver checks them".
func TestReviewersResolverAndRuntimeAgree(t *testing.T) {
	t.Parallel()
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf(`"arn:aws:iam::123456789012:user/r%d"`, i)
	}
	cases := map[string]string{
		"101 reviewers":     strings.Join(many, ", "),
		"vertical tab":      `"arn:aws:iam::123456789012:user/a\vb"`,
		"form feed":         `"arn:aws:iam::123456789012:user/a\fb"`,
		"control character": `"arn:aws:iam::123456789012:user/a\x01b"`,
		"escape character":  `"arn:aws:iam::123456789012:user/a\eb"`,
		"3000 characters":   `"arn:aws:iam::123456789012:user/` + strings.Repeat("a", 3000) + `"`,
	}
	dir := t.TempDir()
	for name, reviewers := range cases {
		src := `solution: rv
version: 1
steps:
  - id: approve
    review: {of: send, reviewers: [` + reviewers + `]}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: [a@example.com], subject: s, text: t}
`
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		os.WriteFile(file, []byte(src), 0o644)
		if code, _, _ := run("check", file); code != ExitOK {
			continue // the resolver refuses it too: consistent
		}
		out := filepath.Join(dir, "out-"+strings.ReplaceAll(name, " ", "-"))
		if code, _, errs := run("compile", file, "-o", out); code != ExitOK {
			t.Fatalf("%s: compile: %s", name, errs)
		}
		asl, _ := os.ReadFile(filepath.Join(out, "rv.asl.json"))
		var def struct {
			States map[string]struct {
				Parameters struct {
					Payload struct {
						Reviewers []string `json:"reviewers"`
					}
				}
			}
		}
		if err := json.Unmarshal(asl, &def); err != nil {
			t.Fatal(err)
		}
		pats := def.States["approve"].Parameters.Payload.Reviewers
		_, err := review.New(review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: review.NewID(), RunID: "run", Step: "approve", Of: "send", Tool: "send-email",
			ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58", Input: json.RawMessage(`{}`), Reviewers: pats, TimeoutSeconds: 60})
		if err != nil {
			t.Errorf("%s: toolgate check accepts the Solution, but review-request refuses its review Task: %v", name, err)
		}
	}
}

// A direct-lane review's run_id is the operator's (the envelope's), and
// both the envelope and review-request accept any character in it but
// NUL, CR and LF ("must be 1 to 1024 printable characters"). `toolgate
// review show` and `list` print it raw to the reviewer's terminal: an ESC
// sequence in it can hide what follows (here SGR 8, conceal: the inputs,
// recipients included) or draw other text, so the reviewer approves inputs
// they were not shown.
func TestReviewShowNeverPrintsControlCharacters(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	runID := "invoke-20261129T000000Z-0011223344556677\x1b[8m"
	r, err := review.New(review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: review.NewID(), RunID: runID, Step: "invoke-review", Of: "invoke", Tool: "send-email",
		ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58", Input: json.RawMessage(`{"to":["everyone@example.com"],"subject":"s","text":"t"}`),
		TimeoutSeconds: 600})
	if err != nil {
		return // refused at the request: fine
	}
	if _, _, err := e.reviews.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	local := []string{"--endpoint", e.decision.Endpoint(), "--as", "alice"}
	for _, sub := range [][]string{{"show", r.ID}, {"list"}} {
		code, out, errs := e.cli.run(append(append([]string{"review"}, sub...), local...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d %s", sub, code, errs)
		}
		if strings.ContainsRune(out, 0x1b) {
			t.Errorf("review %s writes a raw ESC from the run id to the reviewer's terminal:\n%q", sub[0], out)
		}
	}
}

// review show prints the reviewed input and the reason so that neither can
// hide or forge what a reviewer reads: invisible and bidirectional
// characters escaped, the reason on one line.
func TestReviewShowEscapesInputAndReason(t *testing.T) {
	t.Parallel()
	view := map[string]any{"review_id": "rv_00000000000000000000000000000001", "status": "APPROVED", "tool": "send-email",
		"input_digest": "sha256:aa", "approver": "arn:aws:iam::000000000000:user/alice", "decided_at": "2026-12-01T00:00:00.000Z",
		"reason": "ok\ninput\tsha256:forged\u202e", "input": map[string]any{"subject": "Pay \u202e4321\ufe01\U000E0041"}}
	out, _ := json.Marshal(view)
	var stdout, stderr bytes.Buffer
	if code := printReview(out, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := stdout.String()
	for _, r := range []string{"\u202e", "\ufe01", "\U000E0041"} {
		if strings.Contains(got, r) {
			t.Errorf("review show prints %U raw:\n%s", []rune(r)[0], got)
		}
	}
	if strings.Count(got, "sha256:forged") != 1 || strings.Contains(got, "\ninput\tsha256:forged") || !strings.Contains(got, `ok\ninput`) {
		t.Errorf("the reason forges a line:\n%s", got)
	}
	if !strings.Contains(got, `\u202e4321`) {
		t.Errorf("the input's U+202E is not shown as an escape:\n%s", got)
	}
}
