package resolver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// Every Task payload the resolver compiles decodes with the runtime's own
// decoders: each tool Task's with tool.DecodeEnvelope (what the
// dispatcher runs), each review Task's with review.DecodeTask (what
// review-request runs), once every path is filled with a value of its
// type, as Step Functions would. The contract's names are spelled once
// (shared/tool), and this is what ties the compiler to them.
func TestTaskPayloadsDecode(t *testing.T) {
	files := exampleSolutions()
	const run = "arn:aws:states:us-east-1:123456789012:execution:toolgate-x:run-1"
	fill := map[string]any{
		"run_id": run, "seq": 1, "idempotency_key": run + "/1", "attempt": 1,
		"approval":   map[string]any{"review_id": "rv_0123456789abcdef0123456789abcdef", "decision": "approve"},
		"task_token": "token-1",
	}
	var resolve func(v any, top bool) any
	resolve = func(v any, top bool) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, x := range v {
				name, isPath := strings.CutSuffix(k, ".$")
				switch {
				case !isPath:
					out[k] = resolve(x, false)
				case top && fill[name] != nil:
					out[name] = fill[name]
				case name == "start" && top: // $.meta.start, as a Starter answered it
					out[name] = map[string]any{"starter": "arn:aws:iam::123456789012:role/starter", "end_user": nil}
				case name == "park_id": // $.parks.<id>.park_id, as Init sets it
					out[name] = nil
				case name == "requester": // a verified principal
					out[name] = "arn:aws:iam::123456789012:role/starter"
				case name == "start_time" || name == "run_started_at": // $$.Execution.StartTime
					out[name] = "2026-12-01T00:00:00.000Z"
				case name == "execution_arn":
					out[name] = run
				case name == "parent_run_id": // the parent's execution ARN (a child run) or ""
					out[name] = run
				case name == "parent_seq" || name == "seq":
					out[name] = 1
				case name == "execution_input": // a child's whole execution input
					out[name] = map[string]any{"input": map[string]any{}, "meta": map[string]any{"parent_run_id": run, "parent_seq": 1}}
				default: // a binding in the input: any JSON value decodes
					out[name] = "bound value"
				}
			}
			return out
		case []any:
			for i := range v {
				v[i] = resolve(v[i], false)
			}
		}
		return v
	}
	tasks := 0
	for _, f := range files {
		if _, err := os.Stat(strings.TrimSuffix(f, ".yaml") + ".err"); err == nil {
			continue // a refusal: nothing compiles
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(f, src, Options{Toolsets: LockLookup("../testdata/toolsets")})
		if !res.OK() {
			t.Fatalf("%s: %v", f, res.Diagnostics)
		}
		var def struct {
			States map[string]struct {
				Type, Resource string
				Parameters     struct{ Payload map[string]any }
			}
		}
		if err := json.Unmarshal(res.Definition, &def); err != nil {
			t.Fatal(err)
		}
		for name, st := range def.States {
			if st.Type != "Task" {
				continue
			}
			tasks++
			payload, err := json.Marshal(resolve(st.Parameters.Payload, true))
			if err != nil {
				t.Fatal(err)
			}
			switch st.Resource {
			case "arn:aws:states:::lambda:invoke":
				switch {
				case name == stateStarter:
					if _, _, _, err := review.DecodeRunStartCheck(payload); err != nil {
						t.Errorf("%s: state %s: review-request refuses its payload: %v\n%s", filepath.Base(f), name, err, payload)
					}
					continue
				case name == stateStarterChild:
					if _, err := review.DecodeChildCheck(payload); err != nil {
						t.Errorf("%s: state %s: review-request refuses its payload: %v\n%s", filepath.Base(f), name, err, payload)
					}
					continue
				case strings.HasSuffix(name, "-record"), strings.HasSuffix(name, "-claim"):
					// The child's version ARN, as publishing substitutes it.
					payload = []byte(placeholderPattern.ReplaceAllString(string(payload), "arn:aws:states:us-east-1:123456789012:stateMachine:toolgate-x_child:1"))
					_, res, _, err := review.DecodeChildStart(payload, nil)
					if err != nil {
						t.Errorf("%s: state %s: review-request refuses its payload: %v\n%s", filepath.Base(f), name, err, payload)
					} else if res.Traceparent == "" {
						// The Task's ResultSelector reads $.Payload.traceparent.
						t.Errorf("%s: state %s: review-request answers its payload without the child's traceparent\n%s", filepath.Base(f), name, payload)
					}
					continue
				}
				if _, err := tool.DecodeEnvelope(payload); err != nil {
					t.Errorf("%s: state %s: the dispatcher refuses its payload: %v\n%s", filepath.Base(f), name, err, payload)
				}
			case "arn:aws:states:::lambda:invoke.waitForTaskToken":
				if strings.HasSuffix(name, "-park") {
					if err := decodeParkTask(st.Parameters.Payload); err != nil {
						t.Errorf("%s: state %s: its payload is not a park Task's: %v\n%s", filepath.Base(f), name, err, payload)
					}
					continue
				}
				if _, err := review.DecodeTask(payload); err != nil {
					t.Errorf("%s: state %s: review-request refuses its payload: %v\n%s", filepath.Base(f), name, err, payload)
				}
			case "arn:aws:states:::states:startExecution.sync:2", "arn:aws:states:::aws-sdk:sfn:describeExecution":
				// A workflow step's child: no toolgate function reads it.
			default:
				t.Errorf("%s: state %s: Task resource %s", filepath.Base(f), name, st.Resource)
			}
		}
	}
	if tasks == 0 {
		t.Fatal("no Task in testdata/solutions")
	}
}

// exampleSolutions are the repository's example Solutions: testdata's,
// and those on registered toolsets.
func exampleSolutions() []string {
	files, _ := filepath.Glob("../testdata/solutions/*.yaml")
	named, _ := filepath.Glob("../testdata/toolsets/solutions/*.yaml")
	return append(files, named...)
}

// decodeParkTask checks a park Task's payload as compiled (its paths not
// resolved) against the contract of review-request's park route
// (docs/parking.md, "The park Task's request and result"): exactly the
// members task_token ($$.Task.Token) and park, whose members are exactly
// park.Request's, once each, the paths where the run gives the value
// ($.meta.run_id, $$.Execution.StartTime, the Task's seq and key) and
// literal values of park.Request's types elsewhere. The park route's own
// decoder is review-request's (shared/review), which this test does not
// link; it decodes park.Request strictly.
func decodeParkTask(payload map[string]any) error {
	if len(payload) != 2 || payload["task_token.$"] != "$$.Task.Token" {
		return fmt.Errorf("want exactly park and task_token.$ = $$.Task.Token, got %v", slices.Collect(maps.Keys(payload)))
	}
	members, ok := payload["park"].(map[string]any)
	if !ok {
		return fmt.Errorf("park is %T, want an object", payload["park"])
	}
	paths := map[string]string{"run_id": "$.meta.run_id", "run_started_at": "$$.Execution.StartTime", "seq": "", "idempotency_key": ""}
	filled := map[string]any{}
	for k, v := range members {
		name, isPath := strings.CutSuffix(k, ".$")
		want, mustPath := paths[name]
		switch {
		case isPath != mustPath:
			return fmt.Errorf("member %s: a path where the run gives it, a literal elsewhere", k)
		case isPath && want != "" && v != want:
			return fmt.Errorf("member %s is %v, want %s", k, v, want)
		case isPath && want == "" && !strings.HasPrefix(v.(string), "States.Format("):
			return fmt.Errorf("member %s is %v, want the Task's States.Format", k, v)
		case isPath:
			filled[name] = "2026-12-01T00:00:00.000Z"
		default:
			filled[name] = v
		}
	}
	b, err := json.Marshal(filled)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var req park.Request
	if err := dec.Decode(&req); err != nil {
		return err
	}
	if got, want := slices.Sorted(maps.Keys(filled)), slices.Sorted(slices.Values(tool.FieldNames(park.Request{}))); !slices.Equal(got, want) {
		return fmt.Errorf("members %v, want park.Request's %v", got, want)
	}
	return nil
}
