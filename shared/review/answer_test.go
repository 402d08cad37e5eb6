package review

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/tool"
)

// showTask is goodTask as a review that shows values: kind show, of and
// tool "", with a question.
var showTask = strings.NewReplacer(`"of":"send","tool":"send-email"`, `"of":"","tool":"","kind":"show","ask":{"type":"string", "maxLength":20}`).Replace(goodTask)

func TestDecodeTaskOfAReviewThatShowsValues(t *testing.T) {
	r, err := DecodeTask([]byte(showTask))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Shows() || r.Of != "" || r.Tool != "" || string(r.Ask) != `{"type":"string","maxLength":20}` {
		t.Fatalf("%+v", r)
	}
	if v := NewView(r, time.Now(), true); v.Kind != tool.ReviewShow || string(v.Ask) != string(r.Ask) {
		t.Fatalf("view %+v", v)
	}
}

func TestDecodeTaskWithoutKindIsACallReview(t *testing.T) {
	r, err := DecodeTask([]byte(goodTask))
	if err != nil || r.Kind != tool.ReviewOfCall || r.Shows() || r.Ask != nil || r.Editable != nil {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestDecodeTaskRefusesBadQuestionsEditsAndNotices(t *testing.T) {
	edit := func(from, to string) string { return strings.Replace(goodTask, from, to, 1) }
	many := make([]string, tool.MaxNotify+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("ops%d@example.com", i))
	}
	for name, c := range map[string]struct{ payload, want string }{
		"show review with a tool":   {strings.Replace(showTask, `"tool":""`, `"tool":"send-email"`, 1), `of and tool must be ""`},
		"show review with a step":   {strings.Replace(showTask, `"of":""`, `"of":"send"`, 1), `of and tool must be ""`},
		"unknown kind":              {edit(`"step":"approve",`, `"step":"approve","kind":"peek",`), `kind "peek" is not`},
		"ask not an object":         {edit(`"step":"approve",`, `"step":"approve","ask":"string",`), `ask must be a JSON object`},
		"ask not a schema":          {edit(`"step":"approve",`, `"step":"approve","ask":{"type":"strung"},`), `ask does not compile`},
		"ask too large":             {edit(`"step":"approve",`, `"step":"approve","ask":{"description":"`+strings.Repeat("x", tool.MaxAskSchemaBytes)+`"},`), `over 8192`},
		"editable on a show review": {strings.Replace(showTask, `"kind":"show"`, `"kind":"show","editable":["text"]`, 1), `editable is for reviews of a call`},
		"editable to of send-email": {edit(`"step":"approve",`, `"step":"approve","editable":["text","to"],`), `editable[1] names send-email's "to", which decides where`},
		"editable twice":            {edit(`"step":"approve",`, `"step":"approve","editable":["text","text"],`), `names "text" twice`},
		"editable empty name":       {edit(`"step":"approve",`, `"step":"approve","editable":[""],`), `editable[0]`},
		"editable line break":       {edit(`"step":"approve",`, `"step":"approve","editable":["text","a\nreviewers"],`), `editable[1] holds a control or invisible character`},
		"editable escape":           {edit(`"step":"approve",`, `"step":"approve","editable":["a\u001b[2K"],`), `editable[0] holds a control or invisible character`},
		"too many notify":           {edit(`"step":"approve",`, `"step":"approve","notify":[`+strings.Join(many, ",")+`],`), `notify lists 51 addresses, over 50`},
		"bad notify address":        {edit(`"step":"approve",`, `"step":"approve","notify":["not an address"],`), `notify[0] is not an addr-spec`},
	} {
		_, err := DecodeTask([]byte(c.payload))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, c.want)
		}
	}
}

func TestSameRequestComparesTheQuestionAndTheEditableMembers(t *testing.T) {
	a, _ := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`, `"step":"approve","editable":["text"],`, 1)))
	b, _ := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`, `"step":"approve","editable":["subject"],`, 1)))
	c, _ := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`, `"step":"approve","editable":["text"],`, 1)))
	if a.SameRequest(b) || !a.SameRequest(c) {
		t.Fatal("SameRequest ignores editable")
	}
	// Names are compared one by one, never joined: "subject\ntext" is
	// one name, not two. DecodeTask refuses such a name, so the review
	// that holds it is made by hand: SameRequest must not rely on that.
	d, _ := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`, `"step":"approve","editable":["subject","text"],`, 1)))
	e := *d
	e.Editable = []string{"subject\ntext"}
	if d.SameRequest(&e) {
		t.Fatal(`editable [subject text] and ["subject\ntext"] ask the same`)
	}
}

// askReview is a review asking for a string of at most 10 characters,
// whose subject and text are editable.
func askReview(t *testing.T) *Review {
	t.Helper()
	r, err := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`,
		`"step":"approve","ask":{"type":"string","maxLength":10},"editable":["subject","text"],`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckAnswer(t *testing.T) {
	r := askReview(t)
	plain, _ := DecodeTask([]byte(goodTask))
	if got, err := CheckAnswer(r, Approve, json.RawMessage(` "yes" `)); err != nil || string(got) != `"yes"` {
		t.Fatalf("%s %v", got, err)
	}
	if got, err := CheckAnswer(plain, Reject, nil); err != nil || got != nil {
		t.Fatalf("%s %v", got, err)
	}
	for name, c := range map[string]struct {
		r      *Review
		v      Verdict
		answer string
		want   string
	}{
		"approval without an answer": {r, Approve, ``, `must carry an answer`},
		"answer with a rejection":    {r, Reject, `"no"`, `approvals only`},
		"answer to no question":      {plain, Approve, `"yes"`, `asks no question`},
		"answer not JSON":            {r, Approve, `yes`, `not JSON`},
		"answer too long":            {r, Approve, `"secret-value-too-long"`, `/ fails "maxLength"`},
		"answer of another type":     {r, Approve, `{"secret-value":1}`, `/ fails "type"`},
		"answer over the bound":      {r, Approve, `"` + strings.Repeat("x", tool.MaxAnswerBytes) + `"`, `over 65536`},
	} {
		_, err := CheckAnswer(c.r, c.v, json.RawMessage(c.answer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("%s: the refusal quotes the answer: %v", name, err)
		}
	}
}

func TestCheckEditsMergesTheEditableMembers(t *testing.T) {
	r := askReview(t)
	edits, merged, digest, err := CheckEdits(r, Approve, json.RawMessage(`{"text":"Four items.","subject":"Weekly digest"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"subject":"Weekly digest","text":"Four items.","to":["team@example.com"]}`
	_, wantDigest, _ := tool.InputDigest(json.RawMessage(want))
	if string(edits) != `{"subject":"Weekly digest","text":"Four items."}` || string(merged) != want || digest != wantDigest {
		t.Fatalf("%s %s %s", edits, merged, digest)
	}
	if got := EditedMembers(edits); !slices.Equal(got, []string{"subject", "text"}) {
		t.Fatal(got)
	}
	for name, c := range map[string]struct {
		v     Verdict
		edits string
		want  string
	}{
		"a member not editable":  {Approve, `{"to":["x@example.com"]}`, `member "to" is not editable`},
		"edits with a rejection": {Reject, `{"text":"x"}`, `approvals only`},
		"edits not an object":    {Approve, `["text"]`, `JSON object`},
	} {
		_, _, _, err := CheckEdits(r, c.v, json.RawMessage(c.edits))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, c.want)
		}
	}
	show, _ := DecodeTask([]byte(showTask))
	if _, _, _, err := CheckEdits(show, Approve, json.RawMessage(`{"text":"x"}`)); err == nil || !strings.Contains(err.Error(), "shows values") {
		t.Errorf("edits of a show review: %v", err)
	}
}

// An answer or edits RFC 8785 refuses are refused without quoting them:
// a duplicate member's name is the reviewer's text, as a value is.
func TestRefusedAnswersAndEditsQuoteNoNameOfTheirs(t *testing.T) {
	r, err := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`,
		`"step":"approve","ask":{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","maxLength":10}}},"editable":["text"],`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ answer, edits, want string }{
		"a name twice in the answer":  {`{"secret-name":1,"secret-name":2}`, ``, `a name twice`},
		"a name twice in an edit":     {``, `{"text":{"secret-name":1,"secret-name":2}}`, `a name twice`},
		"a lone surrogate in an edit": {``, `{"text":"\ud800secret-name"}`, `unpaired surrogate`},
		"a number past 2^53":          {`9007199254740993`, ``, `the number ending at byte 16`},
	} {
		if c.answer != "" {
			_, err = CheckAnswer(r, Approve, json.RawMessage(c.answer))
		} else {
			_, _, _, err = CheckEdits(r, Approve, json.RawMessage(c.edits))
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want an error mentioning %q and quoting nothing of it", name, err, c.want)
		}
	}
}

func TestDecideDetailBindsTheAnswerAndTheEdits(t *testing.T) {
	if d, err := DecideDetail(nil, nil); err != nil || d != "" {
		t.Fatalf("no answer nor edits: %q %v (want \"\", as before answers)", d, err)
	}
	a, _ := DecideDetail(json.RawMessage(`"yes"`), nil)
	b, _ := DecideDetail(json.RawMessage(`"yes"`), json.RawMessage(`{"text":"x"}`))
	c, _ := DecideDetail(json.RawMessage(` "yes"`), json.RawMessage(`{ "text" : "x" }`))
	_, want, _ := tool.InputDigest(json.RawMessage(`{"answer":"yes","edits":null}`))
	if a != want || a == b || b != c || !strings.HasPrefix(b, "sha256:") {
		t.Fatalf("%s %s %s (want %s)", a, b, c, want)
	}
	bind, err := DecideBinding("rv_x", Approve, "sha256:00", json.RawMessage(`"yes"`), nil)
	if err != nil || bind != (caller.Binding{Action: caller.ActionDecide, Target: "rv_x", Decision: "approve", InputDigest: "sha256:00", Detail: a}) {
		t.Fatalf("%+v %v", bind, err)
	}
	if _, err := DecideDetail(json.RawMessage(`yes`), nil); err == nil {
		t.Fatal("an answer that is not JSON binds")
	}
}

func TestAShowReviewApprovesNoCall(t *testing.T) {
	r, _ := DecodeTask([]byte(showTask))
	r.Status, r.Approver, r.DecidedAt, r.ExpiresAt = Approved, "arn:aws:iam::123456789012:user/bob", time.Now(), time.Now().Add(time.Hour)
	c := CheckApproval(r, Use{RunID: r.RunID, Step: "", Tool: "", ToolsetID: r.ToolsetID, InputDigest: r.InputDigest, Key: "k", Now: time.Now()})
	if c.Allowed || !strings.Contains(c.Reason, "shows values and approves no tool call") {
		t.Fatalf("%+v", c)
	}
}

func TestTheDecisionJSONOfAnEditedApproval(t *testing.T) {
	r := askReview(t)
	edits, _, digest, _ := CheckEdits(r, Approve, json.RawMessage(`{"text":"Four items."}`))
	r.Status, r.Answer, r.Edits, r.ApprovedDigest = Approved, json.RawMessage(`"yes"`), edits, digest
	d := r.Decision()
	if string(d.Answer) != `"yes"` || !slices.Equal(d.Edited, []string{"text"}) || d.ReviewedDigest != r.InputDigest || d.InputDigest != digest {
		t.Fatalf("%+v", d)
	}
	plain, _ := DecodeTask([]byte(goodTask))
	plain.Status = Approved
	out, _ := json.Marshal(plain.Decision())
	if !strings.Contains(string(out), `"answer":null`) || strings.Contains(string(out), "edited") || strings.Contains(string(out), "reviewed_digest") {
		t.Fatalf("%s", out)
	}
}

// CheckEdits never lets a member outside the editable list through, and
// what it returns digests to what it says: the merged input is the
// reviewed input with the edits' members replaced.
func FuzzCheckEdits(f *testing.F) {
	f.Add([]byte(`{"text":"x"}`))
	f.Add([]byte(`{"text":{"a":[1,2]},"subject":null}`))
	f.Add([]byte(`{"to":["x@example.com"]}`))
	f.Add([]byte(`{"text":1e400}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, edits []byte) {
		r, err := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve",`, `"step":"approve","editable":["subject","text"],`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		canonical, merged, digest, err := CheckEdits(r, Approve, edits)
		if err != nil || canonical == nil {
			return
		}
		for _, name := range EditedMembers(canonical) {
			if !slices.Contains(r.Editable, name) {
				t.Fatalf("member %q is not editable", name)
			}
		}
		again, d, err := MergeEdits(r.Input, canonical)
		if err != nil || d != digest || string(again) != string(merged) {
			t.Fatalf("merging again gives %s %s (%v), not %s %s", again, d, err, merged, digest)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(merged, &m) != nil || string(m["to"]) != `["team@example.com"]` {
			t.Fatalf("the merged input %s lost its recipients", merged)
		}
	})
}

// An answer is recorded, and carried in the decision JSON, in its RFC 8785
// form: the resolver bounds a number in the run's state at
// inputrecord.NumberBytes and an object at its properties once each, so a
// number written with many digits (an exact double, which the canonical
// check lets through) or a member repeated must not reach the state as
// written.
func TestAnAnswerIsRecordedInItsCanonicalForm(t *testing.T) {
	two1000 := "10715086071862673209484250490600018105614048117055336074437503883703510511249361224931983788156958581275946729175531468251871452856923140435984577574698574803934567774824230985421074605062371141877954182153046474983581941267398767559165543946077062914571196477686542167660429831652624386837205668069376"
	for name, c := range map[string]struct{ ask, answer, want string }{
		"2^1000 written out": {`{"type":"integer"}`, two1000, `1.0715086071862673e+301`},
		"one with zeros":     {`{"type":"number"}`, "1." + strings.Repeat("0", 5000), `1`},
		"repeated member": {`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"boolean"}}}`,
			`{"a":true` + strings.Repeat(`,"a":true`, 500) + `}`, `{"a":true}`},
	} {
		r := &Review{ID: "rv_x", Ask: json.RawMessage(c.ask)}
		got, err := CheckAnswer(r, Approve, json.RawMessage(c.answer))
		if err != nil {
			// Refusing it holds the bound too.
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: recorded %d bytes (%.40s...), want %s", name, len(got), got, c.want)
		}
	}
}

// The bound holds for the answer as recorded: "1e20" is 4 bytes as sent
// and 21 in its RFC 8785 form, so an answer within tool.MaxAnswerBytes as
// sent may pass it as recorded.
func TestAnAnswerOverTheBoundInItsCanonicalFormIsRefused(t *testing.T) {
	r := &Review{ID: "rv_x", Ask: json.RawMessage(`{"type":"array","maxItems":100000,"items":{"type":"number"}}`)}
	answer := "[" + strings.Repeat("1e20,", 12000) + "1e20]"
	if len(answer) > tool.MaxAnswerBytes {
		t.Fatalf("the answer is %d bytes as sent", len(answer))
	}
	got, err := CheckAnswer(r, Approve, json.RawMessage(answer))
	if err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("recorded %d bytes, err %v", len(got), err)
	}
}
