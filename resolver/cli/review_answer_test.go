package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/toolset"
)

func TestReviewApproveAnswerAndEditFlagsMisuse(t *testing.T) {
	dir := t.TempDir()
	edits := filepath.Join(dir, "edits.json")
	if err := os.WriteFile(edits, []byte(`{"text":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notObject := filepath.Join(dir, "list.json")
	if err := os.WriteFile(notObject, []byte(`["text"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(dir, "twice.json")
	if err := os.WriteFile(twice, []byte(`{"text":"x","text":"y"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	id := review.NewID()
	local := []string{"--endpoint", "http://127.0.0.1:1", "--as", "alice"}
	for name, a := range map[string][]string{
		"--answer and --answer-file":     {"--answer", "yes", "--answer-file", edits},
		"--answer-file missing":          {"--answer-file", filepath.Join(dir, "none")},
		"--edit without =":               {"--edit", "text"},
		"--edit without a name":          {"--edit", "=x"},
		"a member edited twice":          {"--edit", "text=a", "--edit", "text=b"},
		"--edit and --edits-file, twice": {"--edits-file", edits, "--edit", "text=b"},
		"--edits-file not an object":     {"--edits-file", notObject},
		"--edits-file names one twice":   {"--edits-file", twice},
		"--answer on a rejection":        {"--answer", "yes"},
		"--edit on a rejection":          {"--edit", "text=a"},
		"--edits-file missing":           {"--edits-file", filepath.Join(dir, "none")},
	} {
		sub := "approve"
		if strings.Contains(name, "rejection") {
			sub = "reject"
			a = append(a, "--reason", "no")
		}
		args := append(append([]string{"review", sub, id}, a...), local...)
		if code, _, errs := localAWS().run(args...); code != ExitMisuse {
			t.Errorf("%s: exit %d, want %d\n%s", name, code, ExitMisuse, errs)
		}
	}
}

func TestAnswerJSONFollowsTheQuestionsType(t *testing.T) {
	str := json.RawMessage(`{"type":"string","maxLength":10}`)
	for name, c := range map[string]struct {
		ask        json.RawMessage
		text, want string
		bad        bool
	}{
		"a string question sends the text as a string": {str, `{"not": "parsed"}`, `"{\"not\": \"parsed\"}"`, false},
		"another question parses the text as JSON":     {json.RawMessage(`{"enum":[1,2]}`), ` 2 `, `2`, false},
		"text that is not JSON for a JSON question":    {json.RawMessage(`{"enum":[1,2]}`), `two`, ``, true},
	} {
		got, err := answerJSON(&decisionOptions{answer: c.text, answerFlag: "--answer"}, c.ask)
		if c.bad != (err != nil) || (!c.bad && string(got) != c.want) {
			t.Errorf("%s: %s %v", name, got, err)
		}
		if c.bad && !strings.Contains(err.Error(), "--answer") {
			t.Errorf("%s: the error does not name the flag: %v", name, err)
		}
	}
}

// An approval with an answer and edits through the CLI: the function
// checks them, records them and sends the decision JSON with the answer
// and the edited members; show prints what the approval recorded.
func TestReviewApproveWithAnAnswerAndEdits(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RegisterToolset(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	r, err := review.New(review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: review.IDForToken("token-cli-edit"), TaskToken: "token-cli-edit",
		RunID: "arn:aws:states:us-east-1:123456789012:execution:sm:" + review.NewID(), Step: "approve", Of: "send", Tool: "send-email", ToolsetID: ts.ID,
		Input: json.RawMessage(`{"to":["team@example.com"],"subject":"Weekly digest","text":"Three items."}`), TimeoutSeconds: 3600,
		Ask: json.RawMessage(`{"type":"string","maxLength":20}`), Editable: []string{"subject", "text"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.reviews.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	local := []string{"--endpoint", e.decision.Endpoint(), "--as", "alice"}
	args := func(a ...string) []string { return append(append([]string{"review"}, a...), local...) }
	code, out, errs := e.cli.run(args("show", r.ID)...)
	if code != ExitOK || !strings.Contains(out, "question") || !strings.Contains(out, "editable") || !strings.Contains(out, "subject, text") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = e.cli.run(args("approve", r.ID, "--answer", strings.Repeat("x", 21))...)
	if code != ExitErrors || !strings.Contains(errs, "REVIEW_INVALID_REQUEST") || !strings.Contains(errs, `"maxLength"`) {
		t.Fatalf("a long answer: exit %d\n%s", code, errs)
	}
	code, out, errs = e.cli.run(args("approve", r.ID, "--answer", "ship it", "--edit", "text=Four items.")...)
	if code != ExitOK {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errs)
	}
	calls := e.sfn.Calls("token-cli-edit")
	if len(calls) != 1 || !strings.Contains(calls[0].Output, `"answer":"ship it"`) || !strings.Contains(calls[0].Output, `"edited":["text"]`) {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	code, out, errs = e.cli.run(args("show", r.ID)...)
	if code != ExitOK || !strings.Contains(out, `"ship it"`) || !strings.Contains(out, `{"text":"Four items."}`) {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
}

func TestReviewShowPrintsAReviewThatShowsValues(t *testing.T) {
	v := review.View{ReviewID: review.NewID(), Status: review.Approved, Step: "approve", Kind: "show", Reviewers: []string{},
		Input: json.RawMessage(`{"total":42}`), Ask: json.RawMessage(`{"type":"string","maxLength":20}`), Approver: "arn:aws:iam::000000000000:user/bob",
		Answer: json.RawMessage(`"ship it"`)}
	out, _ := json.Marshal(v)
	var stdout, stderr strings.Builder
	if code := printReview(out, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d %s", code, stderr.String())
	}
	for _, want := range []string{"shows values (step approve)", `question   approve with --answer: the answer must match {"type":"string","maxLength":20}`, `answer     "ship it"`, `"total": 42`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("show prints no %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "\ntool ") {
		t.Errorf("show prints a tool line for a review that shows values:\n%s", stdout.String())
	}
}

// Editable member names come from the reviewed tool's input schema (a
// third party's, for an MCP tool): review show writes them on one line
// with their control and invisible characters escaped, so a name can
// neither forge a line of the review ("reviewers ...") nor hide one
// (a terminal's escape sequences).
func TestReviewShowEscapesEditableNames(t *testing.T) {
	v := review.View{ReviewID: review.NewID(), Status: review.Pending, Step: "approve", Of: "send", Tool: "send-email", Reviewers: []string{},
		Input: json.RawMessage(`{"text":"x"}`), Editable: []string{"text\nreviewers\tanyone", "subject\x1b[1A\x1b[2K"}}
	out, _ := json.Marshal(v)
	var stdout, stderr strings.Builder
	if code := printReview(out, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d %s", code, stderr.String())
	}
	if s := stdout.String(); strings.Contains(s, "\nreviewers\tanyone") || strings.Contains(s, "\x1b") || !strings.Contains(s, `text\nreviewers`) {
		t.Errorf("show prints the editable names as they are:\n%q", s)
	}
}
