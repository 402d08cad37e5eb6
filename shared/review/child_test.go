package review

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

const (
	testParent  = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_parent:run-1"
	testVersion = "arn:aws:states:us-east-1:123456789012:stateMachine:toolgate-dev_child:3"
)

func childStartPayload(input string) string {
	return `{"parent_run_id":"` + testParent + `","seq":2,"state_machine_arn":"` + testVersion + `","input":` + input + `,"attempt":0,"conflict":false}`
}

const childInput = `{"input":{"title":"t"},"meta":{"parent_run_id":"` + testParent + `","parent_seq":2},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":"` + testParent + `"}`

// A parent's record names the child execution from the parent run id and
// seq, under the child's state machine without its version, and binds the
// digest of the child's whole input, whatever its key order.
func TestChildStartNamesTheChildAndBindsItsInput(t *testing.T) {
	_, res, rec, err := DecodeChildStart([]byte(childStartPayload(childInput)))
	if err != nil {
		t.Fatal(err)
	}
	name := tool.ChildExecutionName(testParent, "2")
	if res.ExecutionName != name || len(name) != 67 || strings.ContainsAny(name, ":/") {
		t.Fatalf("execution name %q", res.ExecutionName)
	}
	if want := "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_child:" + name; res.ExecutionARN != want {
		t.Fatalf("execution ARN %s, want %s", res.ExecutionARN, want)
	}
	// The child's own check of the same input, written in another order,
	// finds the same digest.
	reordered := `{"meta":{"parent_seq":2,"parent_run_id":"` + testParent + `"},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":"` + testParent + `","input":{"title":"t"}}`
	c, err := DecodeChildCheck([]byte(`{"execution_arn":"` + res.ExecutionARN + `","execution_input":` + reordered + `,"start_time":"2026-12-01T00:00:00.000Z"}`))
	if err != nil || c.ExecutionARN != res.ExecutionARN || c.InputDigest != rec.InputDigest || c.StartTime != "2026-12-01T00:00:00.000Z" || rec.StateMachineARN != testVersion {
		t.Fatalf("child check %+v %v, want %s %s; record %+v", c, err, res.ExecutionARN, rec.InputDigest, rec)
	}
	// Another input is another digest.
	other, _ := DecodeChildCheck([]byte(`{"execution_arn":"` + res.ExecutionARN + `","execution_input":` + strings.Replace(childInput, `"t"`, `"u"`, 1) + `,"start_time":"2026-12-01T00:00:00Z"}`))
	if other.InputDigest == rec.InputDigest {
		t.Fatal("two inputs share a digest")
	}
}

// A record whose input does not name this parent and seq, or whose state
// machine is not one, is refused: review-request never records a start for
// an execution the step would not start.
func TestChildStartRefusesWhatTheStepWouldNotStart(t *testing.T) {
	for name, payload := range map[string]string{
		"another parent":    childStartPayload(strings.Replace(childInput, "run-1", "run-2", 1)),
		"another seq":       childStartPayload(strings.Replace(childInput, `"parent_seq":2`, `"parent_seq":3`, 1)),
		"no meta":           childStartPayload(`{"input":{}}`),
		"not an object":     childStartPayload(`[1]`),
		"an execution ARN":  strings.Replace(childStartPayload(childInput), testVersion, testParent, 1),
		"a Lambda ARN":      strings.Replace(childStartPayload(childInput), testVersion, "arn:aws:lambda:us-east-1:123456789012:function:f", 1),
		"seq 0":             strings.Replace(childStartPayload(childInput), `"seq":2`, `"seq":0`, 1),
		"a direct run id":   strings.Replace(childStartPayload(childInput), `"parent_run_id":"`+testParent, `"parent_run_id":"direct/x/y`, 1),
		"an unknown member": strings.Replace(childStartPayload(childInput), `{"parent_run_id"`, `{"x":1,"parent_run_id"`, 1),
		"a missing member":  strings.Replace(childStartPayload(childInput), `"seq":2,`, ``, 1),
		"no run input":      childStartPayload(strings.Replace(childInput, `"input":{"title":"t"},`, ``, 1)),
		// The latest revision: its definition changes, and no execution
		// of it would take the record.
		"an unqualified state machine ARN": strings.Replace(childStartPayload(childInput), testVersion, strings.TrimSuffix(testVersion, ":3"), 1),
	} {
		if _, _, _, err := DecodeChildStart([]byte(payload)); err == nil {
			t.Errorf("%s: accepted %s", name, payload)
		}
	}
}

const goodChildPayload = `{"state_machine_arn":"arn:aws:states:us-east-1:123456789012:stateMachine:toolgate-dev_child:3","parent_run_id":"` + testParent + `","seq":2,` +
	`"attempt":0,"conflict":false,"input":{"input":{"title":"t"},"meta":{"parent_run_id":"` + testParent + `","parent_seq":2},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":"` + testParent + `"}}`

// The child's meta names its parent: the record is checked against the
// member the child's Start and InitChild states read, $.meta, by its exact
// name. Go's decoder alone matches "META" or "Meta" too and keeps the last
// of them, so a payload whose meta names another parent than the one it
// records passed.
func TestDecodeChildStartReadsMetaByItsExactName(t *testing.T) {
	if _, res, rec, err := DecodeChildStart([]byte(goodChildPayload)); err != nil || rec.ParentRunID != testParent ||
		res.ExecutionName != tool.ChildExecutionName(testParent, "2") ||
		res.ExecutionARN != "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_child:"+res.ExecutionName {
		t.Fatalf("%+v %+v %v", res, rec, err)
	}
	other := strings.Replace(goodChildPayload, `"meta":{"parent_run_id":"`+testParent+`"`, `"meta":{"parent_run_id":"arn:aws:states:us-east-1:123456789012:execution:x:other"`, 1)
	for name, payload := range map[string]string{
		"another parent in meta, this one in META": strings.Replace(other, `"AWS_STEP`, `"META":{"parent_run_id":"`+testParent+`","parent_seq":2},"AWS_STEP`, 1),
		"meta's members in another case":           strings.Replace(goodChildPayload, `"meta":{"parent_run_id"`, `"meta":{"Parent_Run_ID"`, 1),
		"meta's parent twice":                      strings.Replace(other, `"parent_seq":2}`, `"parent_seq":2,"parent_run_id":"`+testParent+`"}`, 1),
	} {
		if _, _, _, err := DecodeChildStart([]byte(payload)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeChildStart(f *testing.F) {
	f.Add([]byte(childStartPayload(childInput)))
	f.Add([]byte(childStartPayload(`{}`)))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, res, rec, err := DecodeChildStart(data)
		if err != nil {
			return
		}
		in, parent, seq, err := childMeta(c.Input)
		if err != nil || parent != c.ParentRunID || seq != c.Seq || c.Seq.Valid() != nil {
			t.Fatalf("accepted an input that does not name its parent and seq: %s", data)
		}
		if in == nil || strings.Count(rec.StateMachineARN, ":") != 7 { // arn:p:states:r:a:stateMachine:name:version
			t.Fatalf("accepted a start without a run input or of no published version: %s", data)
		}
		if res.ExecutionName != tool.ChildExecutionName(c.ParentRunID, c.Seq) || !strings.HasSuffix(res.ExecutionARN, ":"+res.ExecutionName) ||
			!strings.Contains(res.ExecutionARN, ":execution:") || rec.ParentRunID != c.ParentRunID || !strings.HasPrefix(rec.InputDigest, "sha256:") {
			t.Fatalf("decoded %+v %+v from %s", res, rec, data)
		}
	})
}

func FuzzDecodeChildCheck(f *testing.F) {
	f.Add([]byte(`{"execution_arn":"` + testParent + `","execution_input":` + childInput + `,"start_time":"2026-12-01T00:00:00Z"}`))
	f.Add([]byte(`{"execution_arn":"x","execution_input":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeChildCheck(data)
		if err != nil {
			return
		}
		if !strings.HasPrefix(c.ExecutionARN, "arn:") || !strings.HasPrefix(c.InputDigest, "sha256:") || c.StartTime == "" {
			t.Fatalf("decoded %+v from %s", c, data)
		}
	})
}

// A workflow step inside a for_each names its child from the full seq
// (a string): each item's child is another execution; the number an
// earlier definition sent names the same child as its string.
func TestChildStartInALoop(t *testing.T) {
	loop := func(seq string) string {
		in := strings.Replace(childInput, `"parent_seq":2`, `"parent_seq":`+seq, 1)
		return strings.Replace(childStartPayload(in), `"seq":2`, `"seq":`+seq, 1)
	}
	names := map[string]bool{}
	for _, seq := range []string{`"4.0.1"`, `"4.1.1"`, `"2"`, `2`} {
		_, res, _, err := DecodeChildStart([]byte(loop(seq)))
		if err != nil {
			t.Fatalf("seq %s: %v", seq, err)
		}
		names[res.ExecutionName] = true
	}
	if len(names) != 3 || !names[tool.ChildExecutionName(testParent, "4.1.1")] || !names[tool.ChildExecutionName(testParent, "2")] {
		t.Fatalf("child names %v", names)
	}
	for _, seq := range []string{`"4.1"`, `"04"`, `"4.0.0"`} {
		if _, _, _, err := DecodeChildStart([]byte(loop(seq))); err == nil {
			t.Errorf("seq %s accepted", seq)
		}
	}
	// The record's seq and the input's parent_seq name one step.
	mixed := strings.Replace(loop(`"4.0.1"`), `"parent_seq":"4.0.1"`, `"parent_seq":"4.1.1"`, 1)
	if _, _, _, err := DecodeChildStart([]byte(mixed)); err == nil {
		t.Error("a record for another item's child accepted")
	}
}

// The child's run input is its execution input's input member, by its
// exact name: what the child run reads as $.input, and what the child
// version's input record is checked against.
func TestChildRunInputIsTheInputMember(t *testing.T) {
	payload := strings.Replace(goodChildPayload, `"input":{"title":"t"}`, `"INPUT":{"title":"u"},"input":{"title":"t"}`, 1)
	c, _, _, err := DecodeChildStart([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if in, err := ChildRunInput(c); err != nil || string(in) != `{"title":"t"}` {
		t.Fatalf("%s %v, want {\"title\":\"t\"}", in, err)
	}
}

// A parent published before names were attempted again sends its record
// payload without attempt and conflict: it is read as the first attempt,
// with no conflict, and names the same child as before; every other
// member stays required.
func TestChildStartOfAParentPublishedBeforeAttempts(t *testing.T) {
	old := strings.Replace(childStartPayload(childInput), `,"attempt":0,"conflict":false`, "", 1)
	c, res, _, err := DecodeChildStart([]byte(old))
	if err != nil || c.Attempt != 0 || c.Conflict || res.ExecutionName != tool.ChildExecutionName(testParent, "2") {
		t.Fatalf("a payload without attempt and conflict: %+v %+v %v", c, res, err)
	}
	noSeq := strings.Replace(old, `"seq":2,`, "", 1)
	if _, _, _, err := DecodeChildStart([]byte(noSeq)); err == nil || !strings.Contains(err.Error(), `"seq" is missing`) {
		t.Fatalf("a payload without seq: %v", err)
	}
}
