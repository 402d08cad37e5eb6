package resolver

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The task token leaves a definition through one member only: the review
// or park Task's payload (task_token, $$.Task.Token), which hands it to
// review-request and which Step Functions records in the Task's
// TaskScheduled event. No other state reads $$.Task, so the token never
// enters the state data, a tool's envelope or the run's output, where
// every later event of the execution's history would show it again; and
// a review Task writes at $.reviews.<tool id> what SendTaskSuccess sends
// (the decision JSON), with no ResultSelector that could keep anything
// else (docs/infra.md, "What an execution's history shows"); a park Task
// keeps park.Result's members alone at $.parks.<tool id>.
func TestTaskTokenOnlyInTheReviewTaskPayload(t *testing.T) {
	files := append(exampleSolutions(), "../testdata/demo/demo-each.yaml")
	reviews := 0
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
		var def any
		if err := json.Unmarshal(res.Definition, &def); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		// Every state, those of a for_each's ItemProcessor included.
		var states func(v any)
		states = func(v any) {
			m, _ := v.(map[string]any)
			for state, s := range asMap(m["States"]) {
				st := asMap(s)
				if st["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken" {
					reviews++
					payload := asMap(asMap(st["Parameters"])["Payload"])
					if payload["task_token.$"] != "$$.Task.Token" {
						t.Errorf("%s: review Task %s: task_token.$ is %v", name, state, payload["task_token.$"])
					}
					if rp, _ := st["ResultPath"].(string); strings.HasPrefix(rp, "$.parks.") {
						// A park Task keeps park.Result's three members,
						// each from the output review-decision sends.
						want := map[string]any{"park_id.$": "$.park_id", "decision.$": "$.decision", "reason.$": "$.reason"}
						if !strings.HasSuffix(state, "-park") || !maps.Equal(asMap(st["ResultSelector"]), want) || st["OutputPath"] != nil {
							t.Errorf("%s: park Task %s: ResultSelector %v, OutputPath %v: its result must be park.Result at $.parks.<tool id>", name, state, st["ResultSelector"], st["OutputPath"])
						}
					} else if !strings.HasPrefix(rp, "$.reviews.") || st["ResultSelector"] != nil || st["OutputPath"] != nil {
						t.Errorf("%s: review Task %s: ResultPath %v, ResultSelector %v, OutputPath %v: its result must be the decision at $.reviews.<tool id>",
							name, state, st["ResultPath"], st["ResultSelector"], st["OutputPath"])
					}
				}
				for _, p := range contextTaskPaths(st, "") {
					if p != "Parameters.Payload.task_token.$" || st["Resource"] != "arn:aws:states:::lambda:invoke.waitForTaskToken" {
						t.Errorf("%s: state %s reads $$.Task at %s: only a review Task's task_token may", name, state, p)
					}
				}
				states(st["ItemProcessor"])
			}
		}
		states(def)
	}
	if reviews == 0 {
		t.Fatal("no review Task in the example Solutions")
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// contextTaskPaths lists the paths within a state (members joined by ".",
// a nested ItemProcessor's states left out) whose string values read the
// context object's Task ($$.Task…), as a path or inside an intrinsic
// function.
func contextTaskPaths(v any, prefix string) []string {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "$$.Task") {
			return []string{prefix}
		}
	case map[string]any:
		var out []string
		for k, x := range v {
			if prefix == "" && k == "ItemProcessor" {
				continue
			}
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, contextTaskPaths(x, p)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, contextTaskPaths(x, prefix+"[]")...)
		}
		return out
	}
	return nil
}
