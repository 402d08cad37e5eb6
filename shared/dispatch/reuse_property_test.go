package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// propertyCases is how many random Solutions the property test runs.
const propertyCases = 25

// solutionOp is one tool step of a random Solution: its step id and
// input, how many items its for_each has (0: no loop), and whether its
// branch is taken (a skipped step makes no call and takes no seq).
type solutionOp struct {
	step, text string
	items      int
	taken      bool
}

// plannedCall is one call a run of a random Solution makes, in order.
type plannedCall struct {
	step, text string
	seq        tool.Seq
}

// calls are the calls a run of ops makes, with their seqs as the
// compiled state machine gives them: a top-level call takes the run's
// next counter; a loop takes one, and item i's call is "<counter>.<i>.1".
func calls(ops []solutionOp) []plannedCall {
	var out []plannedCall
	var counter int64
	for _, op := range ops {
		if !op.taken {
			continue
		}
		counter++
		if op.items == 0 {
			out = append(out, plannedCall{op.step, op.text, tool.SeqOf(counter)})
			continue
		}
		for i := range op.items {
			out = append(out, plannedCall{op.step, op.text, tool.Seq(fmt.Sprintf("%d.%d.1", counter, i))})
		}
	}
	return out
}

// randomSolution draws 1 to 8 steps from a small pool of step ids and
// texts, so that one step with one input often comes twice.
func randomSolution(r *rand.Rand) []solutionOp {
	ops := make([]solutionOp, 1+r.IntN(8))
	for i := range ops {
		ops[i] = solutionOp{step: []string{"fetch", "notify", "score"}[r.IntN(3)], text: []string{"x", "y"}[r.IntN(2)], taken: r.IntN(5) > 0}
		if r.IntN(3) == 0 {
			ops[i].items = 1 + r.IntN(3)
		}
	}
	return ops
}

// matchKey is what makes two calls the same call for a fork: step, loop
// index path and input.
func matchKey(c plannedCall) string {
	return fmt.Sprint(c.step, c.seq.LoopPath(), c.text)
}

// expectedRuns are the fork's calls that match no completed call of the
// parent: the k-th fork call of a match key takes the parent's k-th call
// of it (docs/fork.md, "Matching").
func expectedRuns(parent, fork []plannedCall) map[tool.Seq]bool {
	left := map[string]int{}
	for _, c := range parent {
		left[matchKey(c)]++
	}
	runs := map[tool.Seq]bool{}
	for _, c := range fork {
		if left[matchKey(c)] > 0 {
			left[matchKey(c)]--
			continue
		}
		runs[c.seq] = true
	}
	return runs
}

// ranTool records the calls the test tool ran, by idempotency key.
type ranTool struct {
	mu  sync.Mutex
	ran map[string]int
	n   int
}

func (r *ranTool) run(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran[c.Envelope.IdempotencyKey]++
	r.n++
	var in struct{ Text string }
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"text": fmt.Sprintf("%s#%d", in.Text, r.n)})
}

func (r *ranTool) count(runID string, seq tool.Seq) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ran[runID+"/"+string(seq)]
}

// propertySeed is the seed of the property test's draws:
// TOOLGATE_PROPERTY_SEED when set (to replay a failure), else the clock.
func propertySeed(t *testing.T) uint64 {
	if s := os.Getenv("TOOLGATE_PROPERTY_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TOOLGATE_PROPERTY_SEED: %v", err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// The property of forks: for random Solutions (steps, loops, skipped
// branches, one step with one input more than once) whose parent run
// completed a prefix of its calls, a fork of the same Solution runs the
// tool for none of the calls the parent completed and for every other;
// and a fork with one step's input changed runs the tool exactly for the
// calls that match no completed call of the parent. Every reused call
// returns the parent's result of a call with its step, loop path and
// input. The seed is logged; TOOLGATE_PROPERTY_SEED replays it.
func TestAForkRunsTheToolExactlyForCallsItsParentDidNotComplete(t *testing.T) {
	seed := propertySeed(t)
	t.Logf("seed %d (TOOLGATE_PROPERTY_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	e := newEnv(t)
	tl := &ranTool{ran: map[string]int{}}
	d := e.dispatcher(t, "test-echo", tl.run)
	send := func(run string, c plannedCall, forkedFrom string) string {
		fc := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: run, step: c.step, seq: c.seq, input: `{"text":"` + c.text + `"}`, forkedFrom: forkedFrom}
		return handle(t, d, fc)
	}
	for n := range propertyCases {
		ops := randomSolution(r)
		all := calls(ops)
		done := all[:r.IntN(len(all)+1)] // the parent's completed prefix
		parent := newRunID(fmt.Sprintf("p%d", n))
		results := map[string][]string{} // the parent's results by match key
		for _, c := range done {
			results[matchKey(c)] = append(results[matchKey(c)], send(parent, c, ""))
		}
		changed := make([]solutionOp, len(ops))
		copy(changed, ops)
		i := r.IntN(len(changed))
		changed[i].text += "2"
		for _, v := range []struct {
			variant string
			ops     []solutionOp
		}{{"same", ops}, {"changed", changed}} {
			variant, forkOps := v.variant, v.ops
			fork := newRunID(fmt.Sprintf("f%d-%s", n, variant))
			forkCalls := calls(forkOps)
			want := expectedRuns(done, forkCalls)
			taken := map[string]int{}
			for _, c := range forkCalls {
				got := send(fork, c, parent)
				ran := tl.count(fork, c.seq)
				if want[c.seq] != (ran == 1) || ran > 1 {
					t.Fatalf("case %d (%s fork, seed %d): call %s (%s, %s): the tool ran %d times, want run %v\nSolution %+v\nparent completed %d calls",
						n, variant, seed, c.seq, c.step, c.text, ran, want[c.seq], forkOps, len(done))
				}
				if !want[c.seq] {
					k := matchKey(c)
					if prior := results[k][taken[k]]; got != prior {
						t.Fatalf("case %d (%s fork, seed %d): call %s returned %s, want the parent's %s", n, variant, seed, c.seq, got, prior)
					}
					taken[k]++
				}
			}
			if variant == "same" && len(want) != len(all)-len(done) {
				t.Fatalf("case %d (seed %d): the same Solution runs %d calls again, want %d", n, seed, len(want), len(all)-len(done))
			}
		}
	}
}
