package request_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// forkChildEnv is review-request's sfn lane with a parent run P, its fork
// F (F's start record names P as forked_from, as the start lane records
// it), and a child version their workflow steps start.
type forkChildEnv struct {
	*childEnv
	p, f, version string
}

const forkStarter = "arn:aws:iam::000000000000:user/starter"

func startForkChildEnv(t *testing.T, rerunReads bool) *forkChildEnv {
	t.Helper()
	e := startChildEnv(t)
	const sm = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_parent:"
	fc := &forkChildEnv{childEnv: e, p: sm + "run-p", f: sm + "run-f"}
	ctx := t.Context()
	if err := e.store.RecordRunStart(ctx, fc.p, forkStarter, startDigest, review.EndUserRecord{}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.RecordForkStart(ctx, fc.f, forkStarter, startDigest, review.EndUserRecord{}, review.ForkOrigin{From: fc.p, RerunReads: rerunReads}); err != nil {
		t.Fatal(err)
	}
	_, fc.version = e.publish(t, "toolgate-dev_child", `{"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 30, "End": true, "Comment": `+
		strconv.Quote(inputrecord.Prefix+`{"input_limit_bytes":1024}`)+`}}}`)
	return fc
}

// childInput is the child's whole execution input as run's step at seq
// sends it.
func childInput(run string, seq tool.Seq) string {
	return fmt.Sprintf(`{"input":{"title":"t"},"meta":{"parent_run_id":%q,"parent_seq":%q},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, run, seq, run)
}

// record has run's workflow step step (none: "", a parent published
// before steps were named) at seq ask for its child's start record.
func (fc *forkChildEnv) record(t *testing.T, run, step string, seq tool.Seq, attempt int, conflict bool) (tool.ChildStartResult, error) {
	t.Helper()
	stepMember := ""
	if step != "" {
		stepMember = fmt.Sprintf(`"step":%q,`, step)
	}
	out, err := fc.h.Handle(t.Context(), json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,%s"seq":%q,"state_machine_arn":%q,"input":%s,"attempt":%d,"conflict":%v}`,
		run, stepMember, seq, fc.version, childInput(run, seq), attempt, conflict)))
	var res tool.ChildStartResult
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

func (fc *forkChildEnv) mustRecord(t *testing.T, run, step string, seq tool.Seq) string {
	t.Helper()
	res, err := fc.record(t, run, step, seq, 0, false)
	if err != nil {
		t.Fatalf("%s's step %s at %s: %v", run, step, seq, err)
	}
	return res.ExecutionARN
}

// forkedFrom is what the child start record of child holds of its fork.
func (fc *forkChildEnv) forkedFrom(t *testing.T, child string) review.ForkOrigin {
	t.Helper()
	rec, err := fc.store.ChildStart(t.Context(), child)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Fork
}

// A fork's workflow step forks its child from the parent's child of the
// same step and loop index path and the same ordinal: the k-th child the
// fork starts there takes the parent's k-th, in seq order, whatever the
// seqs. Without such a child (a third ordinal, another step, another loop
// item), and for a run that is no fork or a payload that names no step,
// the child records no forked_from. On dynalite and the local Step
// Functions endpoint.
func TestAForksChildIsForkedFromTheParentsChildAtTheSamePlace(t *testing.T) {
	fc := startForkChildEnv(t, false)
	p, f := fc.p, fc.f
	// The parent's children: step open twice at the top level, step other
	// once, step each_w in items 0 and 1 of a loop.
	pOpen1, pOpen2 := fc.mustRecord(t, p, "open", "2"), fc.mustRecord(t, p, "open", "5")
	pOther := fc.mustRecord(t, p, "other", "3")
	pItem0, pItem1 := fc.mustRecord(t, p, "each_w", "4.0.1"), fc.mustRecord(t, p, "each_w", "4.1.1")

	t.Run("a run that is no fork records no forked_from", func(t *testing.T) {
		for _, child := range []string{pOpen1, pOpen2, pOther, pItem0, pItem1} {
			if got := fc.forkedFrom(t, child); got != (review.ForkOrigin{}) {
				t.Errorf("%s: forked_from %+v", child, got)
			}
		}
	})
	// The fork's seqs differ from the parent's: the corrected Solution
	// calls more before.
	for _, c := range []struct {
		name, step string
		seq        tool.Seq
		want       string
	}{
		{"the first ordinal takes the parent's first", "open", "3", pOpen1},
		{"the second ordinal takes the parent's second", "open", "7", pOpen2},
		{"a third ordinal has none", "open", "9", ""},
		{"the same step id elsewhere in the Solution", "other", "8", pOther},
		{"another step has none", "created", "10", ""},
		{"loop item 1 takes the parent's item 1", "each_w", "11.1.1", pItem1},
		{"loop item 0 takes the parent's item 0", "each_w", "11.0.1", pItem0},
		{"loop item 2 has none", "each_w", "11.2.1", ""},
		{"a payload without the step's id has none", "", "12", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			child := fc.mustRecord(t, f, c.step, c.seq)
			if got := fc.forkedFrom(t, child); got.From != c.want || got.RerunReads {
				t.Fatalf("forked_from %+v, want %q", got, c.want)
			}
		})
	}
	t.Run("a retried record Task records the same", func(t *testing.T) {
		child := fc.mustRecord(t, f, "open", "3")
		if got := fc.forkedFrom(t, child); got.From != pOpen1 {
			t.Fatalf("forked_from %+v, want %s", got, pOpen1)
		}
	})
	t.Run("the fork's pointers of a step are its children there, once each", func(t *testing.T) {
		ptrs, err := fc.store.ChildPointers(t.Context(), f, "open", nil)
		if err != nil || len(ptrs) != 3 || ptrs[0].Seq != "3" || ptrs[1].Seq != "7" || ptrs[2].Seq != "9" {
			t.Fatalf("the fork's pointers of open: %+v %v, want seqs 3, 7, 9", ptrs, err)
		}
	})
}

// The fork's child's Starter check answers the forked_from and
// rerun_reads its record holds, which every tool Task of the child sends
// in its envelope's start member; the child of a fork's child is forked
// from the parent's child's child. A child start payload naming its own
// forked_from is refused: only the child pointers choose it.
func TestAForksChildAnswersItsForkedFrom(t *testing.T) {
	ctx := t.Context()
	fc := startForkChildEnv(t, true)
	pChild := fc.mustRecord(t, fc.p, "open", "2")
	res, err := fc.record(t, fc.f, "open", "2", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := fc.forkedFrom(t, res.ExecutionARN); got.From != pChild || !got.RerunReads {
		t.Fatalf("forked_from %+v, want %s with rerun_reads", got, pChild)
	}
	input := childInput(fc.f, "2")
	started, err := fc.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(fc.version), Name: aws.String(res.ExecutionName), Input: aws.String(input)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := fc.h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"execution_arn":%q,"execution_input":%s,"start_time":%q}`,
		aws.ToString(started.ExecutionArn), input, time.Now().UTC().Format(time.RFC3339Nano))))
	if err != nil || !strings.Contains(string(out), `"forked_from":`+strconv.Quote(pChild)) || !strings.Contains(string(out), `"rerun_reads":true`) ||
		!strings.Contains(string(out), `"starter":`+strconv.Quote(forkStarter)) {
		t.Fatalf("the fork's child's Starter check answered %s, %v", out, err)
	}

	// A grandchild: the fork's child's workflow step forks from the
	// parent's child's.
	pGrand := fc.mustRecord(t, pChild, "deep", "1")
	fGrand := fc.mustRecord(t, res.ExecutionARN, "deep", "1")
	if got := fc.forkedFrom(t, fGrand); got.From != pGrand || !got.RerunReads {
		t.Fatalf("the grandchild's forked_from %+v, want %s", got, pGrand)
	}

	payload := fmt.Sprintf(`{"parent_run_id":%q,"step":"open","seq":"4","state_machine_arn":%q,"input":%s,"attempt":0,"conflict":false,"forked_from":%q}`,
		fc.f, fc.version, childInput(fc.f, "4"), pChild)
	var edge messages.InvokeResponse_Error
	if _, err := fc.h.Handle(ctx, json.RawMessage(payload)); !errors.As(err, &edge) || edge.Type != string(review.CodeInvalid) || !strings.Contains(edge.Message, "forked_from") {
		t.Fatalf("a child start naming its forked_from: %v, want REVIEW_INVALID_REQUEST", err)
	}
	for _, step := range []string{"Open", "open#1", strings.Repeat("a", 64)} {
		payload := fmt.Sprintf(`{"parent_run_id":%q,"step":%q,"seq":"4","state_machine_arn":%q,"input":%s,"attempt":0,"conflict":false}`,
			fc.f, step, fc.version, childInput(fc.f, "4"))
		if _, err := fc.h.Handle(ctx, json.RawMessage(payload)); !errors.As(err, &edge) || edge.Type != string(review.CodeInvalid) || !strings.Contains(edge.Message, "not a step id") {
			t.Errorf("step %q: %v, want REVIEW_INVALID_REQUEST", step, err)
		}
	}
}

// The parent's pointer follows its step's child to the next attempt's
// name (the first was held by another execution), and a fork's child is
// forked from that one; a pointer never moves back to an earlier attempt.
// A pointer that names no child of the parent at its seq is passed over.
func TestAForksChildFollowsTheParentsLastAttempt(t *testing.T) {
	ctx := t.Context()
	fc := startForkChildEnv(t, false)
	if _, err := fc.record(t, fc.p, "open", "2", 0, false); err != nil {
		t.Fatal(err)
	}
	next, err := fc.record(t, fc.p, "open", "2", 0, true)
	if err != nil || next.Attempt != 1 || next.Taken {
		t.Fatalf("the next attempt: %+v %v", next, err)
	}
	ptrs, err := fc.store.ChildPointers(ctx, fc.p, "open", nil)
	if err != nil || len(ptrs) != 1 || ptrs[0].ChildRunID != next.ExecutionARN || ptrs[0].Attempt != 1 || ptrs[0].Seq != "2" {
		t.Fatalf("the parent's pointers %+v %v, want attempt 1's child", ptrs, err)
	}
	if err := fc.store.RecordChildPointer(ctx, fc.p, review.ChildPointer{Step: "open", Seq: "2", ChildRunID: "arn:x", Attempt: 0}); !errors.Is(err, dynamo.ErrLaterChild) {
		t.Fatalf("a pointer moved back: %v", err)
	}
	child := fc.mustRecord(t, fc.f, "open", "2")
	if got := fc.forkedFrom(t, child); got.From != next.ExecutionARN {
		t.Fatalf("forked_from %+v, want %s", got, next.ExecutionARN)
	}

	// A pointer naming an execution that is not the parent's child at
	// its seq (its name's hash binds the parent and the seq).
	other, _ := review.ChildExecutionARN(fc.version, tool.ChildAttemptName(fc.f, "3", 0))
	if err := fc.store.RecordChildPointer(ctx, fc.p, review.ChildPointer{Step: "odd", Seq: "3", ChildRunID: other, Attempt: 0}); err != nil {
		t.Fatal(err)
	}
	if got := fc.forkedFrom(t, fc.mustRecord(t, fc.f, "odd", "3")); got.From != "" {
		t.Fatalf("forked from a pointer naming another run's child: %+v", got)
	}
}

// Attacks on where a fork's child is forked from: a child of the same
// step in another loop item, at another loop depth, of a step whose id
// starts with this one's, or of another run that is not the fork's
// parent, is never taken (the pointers' sort keys pad each loop index
// and end the step id and the path with "#", so a begins_with Query reads
// exactly one place). A payload whose seq names another loop item than
// its child's input is refused before anything is read or recorded.
func TestAForksChildIsNeverForkedFromAnotherPlacesChild(t *testing.T) {
	ctx := t.Context()
	fc := startForkChildEnv(t, false)
	p, f := fc.p, fc.f
	pItem1 := fc.mustRecord(t, p, "open", "4.1.1")
	pNested := fc.mustRecord(t, p, "open", "4.1.2.3.1")
	fc.mustRecord(t, p, "open_x", "2")
	fc.mustRecord(t, p, "open", "4.10.1")
	other := "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_parent:run-other"
	if err := fc.store.RecordRunStart(ctx, other, forkStarter, startDigest, review.EndUserRecord{}); err != nil {
		t.Fatal(err)
	}
	fc.mustRecord(t, other, "open", "3")
	fc.mustRecord(t, other, "opens", "3")

	for _, c := range []struct {
		name string
		step string
		seq  tool.Seq
		want string
	}{
		{"the top level takes no loop item's child, nor another step's or run's", "open", "5", ""},
		{"a step whose id is the start of another step id takes none", "ope", "6", ""},
		{"loop item 1 takes item 1's, not item 10's", "open", "7.1.1", pItem1},
		{"a nested loop takes the same nested path only", "open", "7.1.5.3.1", pNested},
		{"a deeper path under item 1 takes none", "open", "8.1.2.4.1", ""},
		{"loop item 100 takes none", "open", "9.100.1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fc.forkedFrom(t, fc.mustRecord(t, f, c.step, c.seq)); got.From != c.want {
				t.Fatalf("forked_from %+v, want %q", got, c.want)
			}
		})
	}

	t.Run("a payload's seq naming another loop item than its input's is refused", func(t *testing.T) {
		payload := fmt.Sprintf(`{"parent_run_id":%q,"step":"open","seq":"10.1.1","state_machine_arn":%q,"input":%s,"attempt":0,"conflict":false}`,
			f, fc.version, childInput(f, "10.10.1"))
		var edge messages.InvokeResponse_Error
		if _, err := fc.h.Handle(ctx, json.RawMessage(payload)); !errors.As(err, &edge) || edge.Type != string(review.CodeInvalid) {
			t.Fatalf("a spoofed loop path: %v, want REVIEW_INVALID_REQUEST", err)
		}
		for _, path := range [][]int64{{1}, {10}} {
			ptrs, err := fc.store.ChildPointers(ctx, f, "open", path)
			if err != nil {
				t.Fatal(err)
			}
			for _, ptr := range ptrs {
				if strings.HasPrefix(string(ptr.Seq), "10.") {
					t.Fatalf("a refused payload recorded a pointer: %+v", ptr)
				}
			}
		}
	})

	t.Run("a payload naming another run as its parent forks from that run's parent only", func(t *testing.T) {
		// other is no fork: a step of other's, whatever it names, records
		// no forked_from, though P has a child at the same place.
		if got := fc.forkedFrom(t, fc.mustRecord(t, other, "open", "4.1.1")); got.From != "" {
			t.Fatalf("a child of a run that is no fork: forked_from %+v", got)
		}
	})
}
