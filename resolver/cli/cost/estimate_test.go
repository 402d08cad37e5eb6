package cost

import (
	"strings"
	"testing"
)

// execution is a local execution ARN: 72 bytes, the length make run's are.
const execution = "arn:aws:states:us-east-1:000000000000:execution:toolgate-demo:demo-1"

// fetch is a first-attempt success of structured-data-fetch with a
// 200-byte result. Its call item is 1010 bytes as claimed (its external
// key and seal included) and 1216 with the result (docs/ledger.md "Items",
// "One item per call"): the claim costs 1 write unit, the finish 2.
func fetch() Call {
	return Call{RunID: execution, Seq: "1", Step: "fetch", Tool: "structured-data-fetch", Status: "SUCCEEDED", Attempt: 1,
		DurationMS: 40, MemoryMB: 128, InputBytes: 60, OutputBytes: 200}
}

func with(c Call, f func(*Call)) Call { f(&c); return c }

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		call        Call
		write, read int
	}{
		{"a first-attempt success writes the claim and the finish", fetch(), 1 + 1, 0},
		// The compact item, with its error code, stays under 1 KB.
		{"a failed first attempt writes the claim and the finish with its error", with(fetch(), func(c *Call) {
			c.Status, c.OutputBytes, c.ErrorCode = "FAILED", 0, "TOOL_UPSTREAM_UNAVAILABLE"
		}), 1 + 1, 0},
		{"an unknown outcome on the first claim writes the same two", with(fetch(), func(c *Call) {
			c.Status, c.OutputBytes, c.ErrorCode = "UNKNOWN", 0, "TOOL_TIMEOUT"
		}), 1 + 1, 0},
		// The item holds one more attempt: still under 1 KB with the result.
		{"a re-claimed attempt writes the claim request, the re-claim and the finish", with(fetch(), func(c *Call) { c.Attempt = 2 }), 1 + 1 + 1, 0},
		{"a replay is the claim request alone, billed by the item with its result", with(fetch(), func(c *Call) { c.Status = "DEDUPLICATED" }), 1, 0},
		{"a refusal before the claim writes its row only", with(fetch(), func(c *Call) {
			c.Status, c.Attempt, c.OutputBytes, c.ErrorCode = "REFUSED", 0, 0, "TOOL_INPUT_INVALID"
		}), 1, 0},
		{"a refusal after the claim request writes the request and its row", with(fetch(), func(c *Call) {
			c.Status, c.Attempt, c.OutputBytes, c.ErrorCode = "REFUSED", 3, 0, "TOOL_UPSTREAM_UNAVAILABLE"
		}), 1 + 1, 0},
		{"a parked call reads its record without claiming it and writes its row", with(fetch(), func(c *Call) {
			c.Status, c.Attempt, c.OutputBytes, c.ErrorCode = "PARKED", 0, 0, "CALL_PARKED"
		}), 1 + 1, 0},
		// 1016 + 3000 = 4016 bytes: 4 units for the finish.
		{"a result over 1 KB is written in one unit per KB", with(fetch(), func(c *Call) { c.OutputBytes = 3000 }), 1 + 4, 0},
		// 6016 bytes: the replay's claim request is billed by the item.
		{"a replay of a large result pays for the whole item", with(fetch(), func(c *Call) {
			c.Status, c.OutputBytes = "DEDUPLICATED", 5000
		}), 6, 0},
		// The compact item holds the run id once, in its key: 200 bytes more
		// keep it under 1 KB.
		{"a long run id still fits the claim and the finish in one unit each", with(fetch(), func(c *Call) { c.RunID += strings.Repeat("x", 200) }), 1 + 1, 0},
		// The review is 1246 bytes: its binding write 2 units, its read 1.
		{"a gated first attempt reads its review and binds it", with(fetch(), func(c *Call) { c.Gated = true }), 2 + 2, 1},
		{"a gated replay reads its review and binds nothing", with(fetch(), func(c *Call) { c.Gated, c.Status = true, "DEDUPLICATED" }), 1, 1},
		{"a gated refusal before the claim reads the review", with(fetch(), func(c *Call) {
			c.Gated, c.Status, c.Attempt, c.OutputBytes = true, "REFUSED", 0, 0
		}), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, r := Units(tc.call)
			if w != tc.write || r != tc.read {
				t.Errorf("Units = %d write, %d read; want %d, %d (outcome %q)", w, r, tc.write, tc.read, OutcomeOf(tc.call))
			}
		})
	}
}

func TestEveryOutcomeHasRequests(t *testing.T) {
	for _, o := range []Outcome{FirstClaim, Reclaim, Replay, RefusedAfterRead, RefusedBeforeClaim, Parked} {
		if len(RequestsPerInvocation[o].Ledger) == 0 {
			t.Errorf("RequestsPerInvocation has no requests for %q", o)
		}
	}
}

func TestGBSeconds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		memoryMB int
		ms       int64
		want     float64
	}{
		{"1024 MB for one second is one GB-second", 1024, 1000, 1},
		{"128 MB for 40 ms", 128, 40, 0.005},
		{"no duration is no compute", 512, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GBSeconds(tc.memoryMB, tc.ms); got != tc.want {
				t.Errorf("GBSeconds(%d, %d) = %v, want %v", tc.memoryMB, tc.ms, got, tc.want)
			}
		})
	}
}

// unitPrices makes every unit's price a distinct power of ten, so that a
// total shows each figure in its own digits: $1 a GB-second, $1 a Lambda
// request, $10 a write unit, $100 a read unit, $1000 an SES message, $1e6
// a state transition.
func unitPrices(t *testing.T) *Prices {
	p, err := LoadPrices("testdata/prices-eu-west-1.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEstimate(t *testing.T) {
	send := Call{RunID: execution, Seq: "2", Step: "send", Tool: SESTool, Status: "SUCCEEDED", Attempt: 1,
		DurationMS: 1000, MemoryMB: 1024, InputBytes: 100, OutputBytes: 50, Gated: true}
	for _, tc := range []struct {
		name  string
		calls []Call
		tr    Transitions
		want  Usage // the total, unpriced but for USD.Total
	}{
		{"a succeeded send-email row is one SES message", []Call{send},
			Transitions{Reason: "not an execution"},
			// The claim 1, the finish 1 (the compact item, under 1 KB), the
			// review's binding 2; its read 1.
			Usage{Invocations: 1, LambdaGBSeconds: 1, LambdaRequests: 1, WriteUnits: 4, ReadUnits: 1, SESMessages: 1,
				USD: USD{Total: 1 + 1 + 40 + 100 + 1000}}},
		{"a failed or replayed send-email sends nothing", []Call{
			with(send, func(c *Call) { c.Status, c.OutputBytes = "FAILED", 0 }),
			with(send, func(c *Call) { c.Status = "DEDUPLICATED" }),
		}, Transitions{},
			// The failure: the claim 1, the finish 1, the binding 2; the
			// replay's claim request 1 (the item with its result, under
			// 1 KB); each a review read.
			Usage{Invocations: 2, LambdaGBSeconds: 2, LambdaRequests: 2, WriteUnits: 4 + 1, ReadUnits: 1 + 1,
				USD: USD{Total: 2 + 2 + 50 + 200}}},
		{"a row's count multiplies every figure", []Call{with(fetch(), func(c *Call) {
			c.Status, c.Invocations, c.MemoryMB, c.DurationMS = "DEDUPLICATED", 3, 2048, 500
		})}, Transitions{},
			Usage{Invocations: 3, LambdaGBSeconds: 3, LambdaRequests: 3, WriteUnits: 3, ReadUnits: 0,
				USD: USD{Total: 3 + 3 + 30}}},
		{"a row without memory_mb has no GB-seconds and says so", []Call{with(fetch(), func(c *Call) { c.MemoryMB = 0 })}, Transitions{},
			Usage{Invocations: 1, LambdaRequests: 1, WriteUnits: 2, MemoryUnknown: 1, USD: USD{Total: 1 + 20}}},
		{"state transitions are priced in the total", []Call{with(fetch(), func(c *Call) { c.MemoryMB, c.DurationMS = 1024, 1000 })},
			Transitions{Available: true, Count: 7},
			Usage{Invocations: 1, LambdaGBSeconds: 1, LambdaRequests: 1, WriteUnits: 2, StateTransitions: ptr(7),
				USD: USD{Total: 1 + 1 + 20 + 7e6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Estimate(execution, tc.calls, tc.tr, unitPrices(t))
			got := r.Total
			if !got.Estimate || !r.Estimate || !r.StepFunctions.Estimate {
				t.Errorf("a figure is not labelled an estimate: %+v", r)
			}
			if got.Invocations != tc.want.Invocations || got.LambdaGBSeconds != tc.want.LambdaGBSeconds ||
				got.LambdaRequests != tc.want.LambdaRequests || got.WriteUnits != tc.want.WriteUnits ||
				got.ReadUnits != tc.want.ReadUnits || got.SESMessages != tc.want.SESMessages ||
				got.MemoryUnknown != tc.want.MemoryUnknown || got.USD.Total != tc.want.USD.Total ||
				(got.StateTransitions == nil) != (tc.want.StateTransitions == nil) ||
				(got.StateTransitions != nil && *got.StateTransitions != *tc.want.StateTransitions) {
				t.Errorf("total\n got %+v\nwant %+v", got, tc.want)
			}
			var sum float64
			for _, u := range r.Tools {
				if !u.Estimate {
					t.Errorf("tool %s is not labelled an estimate", u.Tool)
				}
				sum += u.USD.Total
			}
			if sum+r.StepFunctions.USD != got.USD.Total {
				t.Errorf("the tools' %v and Step Functions' %v do not add up to the total %v", sum, r.StepFunctions.USD, got.USD.Total)
			}
		})
	}
}

func TestEstimateByTool(t *testing.T) {
	send := with(fetch(), func(c *Call) { c.Tool, c.Step, c.Seq = SESTool, "send", "2" })
	r := Estimate(execution, []Call{send, fetch(), with(fetch(), func(c *Call) { c.Status = "DEDUPLICATED" })}, Transitions{}, BuiltinPrices())
	if len(r.Tools) != 2 || r.Tools[0].Tool != SESTool || r.Tools[1].Tool != "structured-data-fetch" {
		t.Fatalf("tools %+v, want send-email then structured-data-fetch", r.Tools)
	}
	if f := r.Tools[1]; f.Invocations != 2 || f.WriteUnits != 3 || f.ReadUnits != 0 || f.SESMessages != 0 {
		t.Errorf("structured-data-fetch: %+v", f)
	}
	if r.StepFunctions.Available || r.Total.StateTransitions != nil || r.Total.USD.StepFunctions != 0 {
		t.Errorf("state transitions that were not available were counted: %+v", r.StepFunctions)
	}
	// us-east-1 list prices: 3 Lambda requests at $0.20 a million, 5 write
	// units at $0.625 a million, no read, 1 SES message at $0.10 a
	// thousand, 3 × 0.005 GB-s at $0.0000133334.
	want := 3*0.2e-6 + 5*0.625e-6 + 0.1e-3 + 0.015*0.0000133334
	if d := r.Total.USD.Total - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("total $%v, want $%v", r.Total.USD.Total, want)
	}
}

func TestStateTransitions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		want   int
	}{
		{"every state entered is a transition", []string{"ExecutionStarted", "PassStateEntered", "PassStateExited",
			"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
			"SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"}, 3},
		{"each retry of a Task is one more", []string{"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskFailed",
			"TaskScheduled", "TaskStarted", "TaskFailed", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited"}, 3},
		{"a Task waiting for its task token is one", []string{"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskSucceeded", "TaskStateExited"}, 1},
		{"states inside a Map iteration count", []string{"MapStateEntered", "MapIterationStarted", "PassStateEntered", "PassStateExited",
			"MapIterationSucceeded", "MapIterationStarted", "PassStateEntered", "PassStateExited", "MapIterationSucceeded", "MapStateExited"}, 3},
		{"an empty history has none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StateTransitions(tc.events); got != tc.want {
				t.Errorf("StateTransitions = %d, want %d", got, tc.want)
			}
		})
	}
}

func ptr(n int) *int { return &n }
