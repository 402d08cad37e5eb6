package review

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
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
	_, res, rec, err := DecodeChildStart([]byte(childStartPayload(childInput)), nil)
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
		if _, _, _, err := DecodeChildStart([]byte(payload), nil); err == nil {
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
	if _, res, rec, err := DecodeChildStart([]byte(goodChildPayload), nil); err != nil || rec.ParentRunID != testParent ||
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
		if _, _, _, err := DecodeChildStart([]byte(payload), nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeChildStart(f *testing.F) {
	f.Add([]byte(childStartPayload(childInput)))
	f.Add([]byte(childStartPayload(`{}`)))
	f.Add([]byte(`{}`))
	f.Add([]byte(childStartPayload(tracedChildInput)))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, res, rec, err := DecodeChildStart(data, nil)
		if err != nil {
			return
		}
		in, parent, seq, fill, err := childMeta(c.Input)
		if fill != (res.Traceparent != "") || (fill && len(res.Traceparent) != tool.MaxTraceparentLength) {
			t.Fatalf("traceparent %q answered for %s", res.Traceparent, data)
		}
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
		_, res, _, err := DecodeChildStart([]byte(loop(seq)), nil)
		if err != nil {
			t.Fatalf("seq %s: %v", seq, err)
		}
		names[res.ExecutionName] = true
	}
	if len(names) != 3 || !names[tool.ChildExecutionName(testParent, "4.1.1")] || !names[tool.ChildExecutionName(testParent, "2")] {
		t.Fatalf("child names %v", names)
	}
	for _, seq := range []string{`"4.1"`, `"04"`, `"4.0.0"`} {
		if _, _, _, err := DecodeChildStart([]byte(loop(seq)), nil); err == nil {
			t.Errorf("seq %s accepted", seq)
		}
	}
	// The record's seq and the input's parent_seq name one step.
	mixed := strings.Replace(loop(`"4.0.1"`), `"parent_seq":"4.0.1"`, `"parent_seq":"4.1.1"`, 1)
	if _, _, _, err := DecodeChildStart([]byte(mixed), nil); err == nil {
		t.Error("a record for another item's child accepted")
	}
}

// The child's run input is its execution input's input member, by its
// exact name: what the child run reads as $.input, and what the child
// version's input record is checked against.
func TestChildRunInputIsTheInputMember(t *testing.T) {
	payload := strings.Replace(goodChildPayload, `"input":{"title":"t"}`, `"INPUT":{"title":"u"},"input":{"title":"t"}`, 1)
	c, _, _, err := DecodeChildStart([]byte(payload), nil)
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
	c, res, _, err := DecodeChildStart([]byte(old), nil)
	if err != nil || c.Attempt != 0 || c.Conflict || res.ExecutionName != tool.ChildExecutionName(testParent, "2") {
		t.Fatalf("a payload without attempt and conflict: %+v %+v %v", c, res, err)
	}
	noSeq := strings.Replace(old, `"seq":2,`, "", 1)
	if _, _, _, err := DecodeChildStart([]byte(noSeq), nil); err == nil || !strings.Contains(err.Error(), `"seq" is missing`) {
		t.Fatalf("a payload without seq: %v", err)
	}
}

// tracedChildInput is a child's input as a parent compiled with trace
// context records it: meta.traceparent null, for review-request to fill.
const tracedChildInput = `{"input":{"title":"t"},"meta":{"parent_run_id":"` + testParent + `","parent_seq":2,"traceparent":null},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":"` + testParent + `"}`

// A parent compiled with trace context asks for the step's traceparent:
// review-request answers the step span ForCall derives (under the
// parent's carried context when it parses, else under the trace id
// derived from the parent's run id), and records the digest of the input
// the start then sends, with that traceparent in meta, so the child's
// own check finds it. A parent published before asks for none, and its
// record is what it was.
func TestChildStartRecordsTheInputWithTheStepTraceparent(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for name, c := range map[string]struct {
		member  string
		carried tool.Traceparent
	}{
		"carried":      {`,"traceparent":"` + carried + `"`, carried},
		"null":         {`,"traceparent":null`, ""},
		"malformed":    {`,"traceparent":"00-zz"`, "00-zz"},
		"not a string": {`,"traceparent":{"a":1}`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			payload := strings.TrimSuffix(childStartPayload(tracedChildInput), "}") + c.member + "}"
			sent, res, rec, err := DecodeChildStart([]byte(payload), secret)
			if err != nil {
				t.Fatal(err)
			}
			want := tracecontext.Format(tracecontext.ForCall(secret, testParent, "2", c.carried.Context()).Step).Traceparent
			if res.Traceparent != want || len(want) != tool.MaxTraceparentLength {
				t.Fatalf("answered traceparent %q, want %q", res.Traceparent, want)
			}
			sc, _ := tracecontext.Parse(tool.TraceContext{Traceparent: res.Traceparent})
			if wantTrace := tracecontext.TraceID(secret, testParent).String(); name != "carried" && sc.TraceID().String() != wantTrace {
				t.Fatalf("trace %s, want the one derived from the parent's run id %s", sc.TraceID(), wantTrace)
			} else if name == "carried" && sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
				t.Fatalf("trace %s, want the carried one", sc.TraceID())
			}
			if !strings.Contains(string(sent.Input), `"traceparent":null`) {
				t.Fatalf("the payload's input changed: %s", sent.Input)
			}
			// What the start sends: the input with the answer in meta, in
			// Step Functions' own member order.
			started := `{"meta":{"traceparent":"` + res.Traceparent + `","parent_seq":2,"parent_run_id":"` + testParent + `"},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":"` + testParent + `","input":{"title":"t"}}`
			check, err := DecodeChildCheck([]byte(`{"execution_arn":"` + res.ExecutionARN + `","execution_input":` + started + `,"start_time":"2026-12-01T00:00:00Z"}`))
			if err != nil || check.InputDigest != rec.InputDigest {
				t.Fatalf("the started input's digest %s (%v), recorded %s", check.InputDigest, err, rec.InputDigest)
			}
			// A child started with another traceparent, or none, is not the
			// one recorded.
			for _, other := range []string{strings.Replace(started, res.Traceparent, carried, 1), strings.Replace(started, `"traceparent":"`+res.Traceparent+`",`, "", 1)} {
				check, err := DecodeChildCheck([]byte(`{"execution_arn":"` + res.ExecutionARN + `","execution_input":` + other + `,"start_time":"2026-12-01T00:00:00Z"}`))
				if err != nil || check.InputDigest == rec.InputDigest {
					t.Fatalf("input %s has the recorded digest", other)
				}
			}
		})
	}
	_, res, rec, err := DecodeChildStart([]byte(childStartPayload(childInput)), secret)
	_, before, _ := tool.InputDigest([]byte(childInput))
	if err != nil || res.Traceparent != "" || rec.InputDigest != before {
		t.Fatalf("a parent published before: traceparent %q, digest %s (want %s), %v", res.Traceparent, rec.InputDigest, before, err)
	}
	// The parent never writes the child's traceparent itself.
	if _, _, _, err := DecodeChildStart([]byte(childStartPayload(strings.Replace(tracedChildInput, `"traceparent":null`, `"traceparent":"`+carried+`"`, 1))), secret); err == nil ||
		strings.Contains(err.Error(), carried) {
		t.Fatalf("a meta.traceparent the parent wrote: %v", err)
	}
}
