package resolver

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metaRead matches a JSONPath (or an intrinsic's argument) reading a
// member of the state data's meta.
var metaRead = regexp.MustCompile(`(?:^|[^$])\$\.meta\.([a-z_]+)`)

// metaWriters are the meta objects a definition's states write whole,
// by state name: the Init states' and the counters' (ResultPath $.meta)
// Parameters.meta or Parameters, and a Map's ItemSelector.meta (the
// iteration's, "<map>/ItemSelector"); inBody says which were written in
// a Map's ItemProcessor or are an ItemSelector's.
type metaWriters struct {
	top, body map[string]map[string]any
}

// walkStates calls f for every state of states and of every Map's
// ItemProcessor in it, with whether the state is in a body.
func walkStates(states map[string]any, inBody bool, f func(name string, st map[string]any, inBody bool)) {
	for name, v := range states {
		st, _ := v.(map[string]any)
		f(name, st, inBody)
		if proc, ok := st["ItemProcessor"].(map[string]any); ok {
			inner, _ := proc["States"].(map[string]any)
			walkStates(inner, true, f)
		}
	}
}

func findMetaWriters(t *testing.T, states map[string]any) metaWriters {
	t.Helper()
	w := metaWriters{top: map[string]map[string]any{}, body: map[string]map[string]any{}}
	walkStates(states, false, func(name string, st map[string]any, inBody bool) {
		into := w.top
		if inBody {
			into = w.body
		}
		params, _ := st["Parameters"].(map[string]any)
		switch {
		case strings.HasPrefix(name, "Init"):
			into[name], _ = params["meta"].(map[string]any)
		case st["ResultPath"] == "$.meta":
			into[name] = params
		}
		if sel, ok := st["ItemSelector"].(map[string]any); ok {
			w.body[name+"/ItemSelector"], _ = sel["meta"].(map[string]any)
		}
	})
	return w
}

// members is the member names of a Parameters object ("name.$" as name).
func members(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, strings.TrimSuffix(k, ".$"))
	}
	slices.Sort(out)
	return out
}

// Every JSONPath a state reads under $.meta exists from Init on: each
// state that writes meta whole writes every member any state reads (in a
// for_each body, every member its states read), traceparent included,
// so that a run given no trace context never fails States.Runtime on a
// missing path. The Init states write traceparent null, the Traced ones
// copy the execution input's, which Start routes to them only when it is
// a string; the tool, review and child-start Tasks read it.
func TestEveryMetaReaderFindsItsMember(t *testing.T) {
	defs := map[string][]byte{}
	goldens, err := filepath.Glob(filepath.Join(solutionsDir, "*.asl.json"))
	if err != nil || len(goldens) < 8 {
		t.Fatalf("goldens %v: %v", goldens, err)
	}
	for _, f := range goldens {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		defs[filepath.Base(f)] = b
	}
	res := compileOnDemo(t, "p.yaml", parentSolution("  - id: w\n    workflow: demo-ticket\n    with: {title: \"${input.t}\", n: 1}\n", ""))
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	defs["workflow step"] = res.Definition
	readers := map[string]int{}
	for name, b := range defs {
		var def struct{ States map[string]any }
		if err := json.Unmarshal(b, &def); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := findMetaWriters(t, def.States)
		for _, init := range []string{stateInit, stateInitChild, stateInitTraced, stateInitChildTraced} {
			m := w.top[init]
			traced := strings.HasSuffix(init, "Traced")
			if v, ok := m["traceparent"]; traced == ok || (ok && v != nil) || (traced && m["traceparent.$"] != metaTraceparent) {
				t.Errorf("%s: %s writes meta %v", name, init, m)
			}
		}
		walkStates(def.States, false, func(state string, st map[string]any, inBody bool) {
			// A Map's own paths (its ItemSelector's) read the outer
			// state; its ItemProcessor's states are walked apart.
			own := maps.Clone(st)
			delete(own, "ItemProcessor")
			text, _ := json.Marshal(own)
			for _, m := range metaRead.FindAllStringSubmatch(string(text), -1) {
				member := m[1]
				readers[member]++
				writers := w.top
				if inBody {
					writers = w.body
				}
				for writer, wm := range writers {
					if !slices.Contains(members(wm), member) {
						t.Errorf("%s: state %s reads $.meta.%s, which %s does not write (it writes %v)", name, state, member, writer, members(wm))
					}
				}
			}
		})
		start, _ := def.States[stateStart].(map[string]any)
		choices, _ := json.Marshal(start["Choices"])
		if !strings.Contains(string(choices), `{"IsPresent":true,"Variable":"$.meta.traceparent"},{"IsString":true,"Variable":"$.meta.traceparent"}],"Next":"InitTraced"`) {
			t.Errorf("%s: Start routes %s", name, choices)
		}
	}
	// The test reads what it means to: the run's traceparent, its
	// counters and its starter.
	for _, m := range []string{"traceparent", "seq", "run_id", "start", "loop_seq", "index"} {
		if readers[m] == 0 {
			t.Errorf("no state reads $.meta.%s: %v", m, readers)
		}
	}
}
