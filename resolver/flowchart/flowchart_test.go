package flowchart

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/invisible"
)

var update = flag.Bool("update", false, "rewrite the golden pictures in testdata/solutions")

const solutionsDir = "../../testdata/solutions"

// goldenSolutions have their pictures as golden files beside them,
// <stem>.mmd and <stem>.dot: reviews with on_timeout and on_reject, a
// Gate A refusal, a no-fallback refusal, a for_each with on_error by
// code, reviews whose on_approve does not go to their tool, and both
// refusals inside and around a for_each.
var goldenSolutions = []string{"human-approval", "refuse-no-review", "refuse-fallback", "for-each-mail", "parallel-approval", "refuse-for-each-gate"}

func compile(t *testing.T, path string) *resolver.Result {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return resolver.Compile(filepath.Base(path), src, resolver.Options{})
}

func render(t *testing.T, f Format, res *resolver.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, f, res.Graph, res.Refused); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGolden compares the pictures of goldenSolutions with their golden
// files; -update rewrites them.
func TestGolden(t *testing.T) {
	for _, name := range goldenSolutions {
		stem := filepath.Join(solutionsDir, name)
		res := compile(t, stem+".yaml")
		for f, ext := range map[Format]string{Mermaid: ".mmd", DOT: ".dot"} {
			t.Run(name+ext, func(t *testing.T) {
				got := render(t, f, res)
				if *update {
					if err := os.WriteFile(stem+ext, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(stem + ext)
				if err != nil {
					t.Fatalf("%v (run go test ./resolver/flowchart -update)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s%s differs (-golden +got):\n%s", stem, ext, diff)
				}
			})
		}
	}
}

// examples lists every example Solution whose steps the resolver checks.
func examples(t *testing.T) map[string]*resolver.Result {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(solutionsDir, "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("example Solutions: %v %v", files, err)
	}
	out := map[string]*resolver.Result{}
	for _, f := range files {
		if res := compile(t, f); res.Graph != nil {
			out[filepath.Base(f)] = res
		}
	}
	return out
}

// Every example Solution draws as a plausible Mermaid flowchart and DOT
// digraph (checkMermaid, checkDOT), and every refused path is drawn.
func TestEveryExampleDrawsPlausibly(t *testing.T) {
	refused := 0
	for name, res := range examples(t) {
		t.Run(name, func(t *testing.T) {
			m := render(t, Mermaid, res)
			for _, p := range checkMermaid(m) {
				t.Errorf("mermaid: %s", p)
			}
			for _, p := range checkDOT(render(t, DOT, res)) {
				t.Errorf("dot: %s", p)
			}
			if len(res.Refused) > 0 {
				refused++
				if !strings.Contains(m, "linkStyle") || !strings.Contains(m, "fill:"+fillRefused) {
					t.Errorf("a refused Solution without a highlighted path:\n%s", m)
				}
			}
		})
	}
	if refused < 3 {
		t.Errorf("only %d examples with a refused path", refused)
	}
}

// Gate A's path in refuse-no-review (fetch → urgent → send) is drawn
// red: its two edges and three steps, the refused call filled; no other
// edge or step is.
func TestRefusedPathIsHighlighted(t *testing.T) {
	res := compile(t, filepath.Join(solutionsDir, "refuse-no-review.yaml"))
	p := draw(res.Graph, res.Refused)
	var edges, nodes []string
	for _, e := range p.edges {
		if e.onPath {
			edges = append(edges, e.from+">"+e.to)
		}
	}
	for _, n := range p.nodes {
		if n.onPath {
			nodes = append(nodes, n.id)
		}
		if n.refused != (n.id == "s_send") {
			t.Errorf("node %s refused: %v", n.id, n.refused)
		}
	}
	if diff := cmp.Diff([]string{"s_fetch>s_urgent", "s_urgent>s_send"}, edges); diff != "" {
		t.Errorf("path edges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s_fetch", "s_urgent", "s_send"}, nodes); diff != "" {
		t.Errorf("path nodes (-want +got):\n%s", diff)
	}
}

// On a review of the tool whose on_approve and on_reject both go to it,
// Gate A's path arrives by the rejection: only that edge is drawn red. On
// a tool whose next and on_error both go to another tool, the fallback
// path leaves by on_error: only that edge is.
func TestHighlightTakesTheEdgeThePathTakes(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // from>to:label of the edges drawn red
	}{
		{"review rejected into its tool", `solution: s
version: 1
steps:
  - id: approve
    review: {of: send}
    on_approve: send
    on_reject: send
  - id: send
    tool: send-email
    with: {to: [a@example.com], subject: s, text: t}
`, []string{"s_approve>s_send:on_reject or timeout"}},
		{"next and on_error to one tool", `solution: s
version: 1
policy: {fetch_hosts: [api.example.com]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "https://api.example.com/x"}
    next: again
    on_error: again
  - id: again
    tool: structured-data-fetch
    with: {url: "https://api.example.com/y"}
`, []string{"s_fetch>s_again:on_error"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := resolver.Compile("x.yaml", []byte(c.src), resolver.Options{})
			if len(res.Refused) == 0 {
				t.Fatalf("not refused by a path check: %v", res.Diagnostics)
			}
			var got []string
			for _, e := range draw(res.Graph, res.Refused).edges {
				if e.onPath {
					got = append(got, e.from+">"+e.to+":"+e.label)
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("red edges (-want +got):\n%s", diff)
			}
		})
	}
}

// hostile is a Solution whose ids, tool name, workflow, rule operand,
// error codes, fail error and targets try to end a label, add a
// statement, open a directive or inject HTML in either language. It is
// refused, and drawn all the same.
const hostile = `solution: "evil\"]"
version: 1
steps:
  - id: "Bad\"] --> click x call alert(1) %%{init: {}}%%"
    tool: "x\"]; s_a --> s_b; style s_a fill:red; <script>alert(1)</script>"
    next: pick
    on_error:
      - {errors: ["\"|> digraph { a -> b } //", "#quot;", "\\\"\\n"], next: pick}
      - {next: "nowhere\"]\n}"}
  - id: pick
    choice:
      - when: {value: "${input.x}", equals: "\"];[` + "`" + `**md**` + "`" + `] {{x}} |y| <b>"}
        next: boom
    default: end
  - id: boom
    fail: {error: "Boom\"] & \\N \\G }; node [shape=none direction LR Style: a#b;", cause: "x"}
  - id: another
    workflow: "x\"]"
`

func TestHostileTextStaysInItsLabels(t *testing.T) {
	res := resolver.Compile("hostile.yaml", []byte(hostile), resolver.Options{})
	if res.Graph == nil {
		t.Fatalf("no graph: %v", res.Diagnostics)
	}
	m := render(t, Mermaid, res)
	for _, p := range checkMermaid(m) {
		t.Errorf("mermaid: %s", p)
	}
	d := render(t, DOT, res)
	for _, p := range checkDOT(d) {
		t.Errorf("dot: %s", p)
	}
	for _, bad := range []string{"<script>", "%%{", "<b>", "#quot;", "{{x}}"} {
		if strings.Contains(m, bad) {
			t.Errorf("mermaid holds %q:\n%s", bad, m)
		}
	}
	// Outside the quoted texts, nothing of the Solution's is left but
	// the made ids.
	outside := regexp.MustCompile(`"[^"]*"`).ReplaceAllString(m, "")
	for _, bad := range []string{"click", "style s_a", "digraph", "Bad", "alert", "nowhere"} {
		if strings.Contains(outside, bad) {
			t.Errorf("mermaid holds %q outside a label:\n%s", bad, outside)
		}
	}
	// A step whose id breaks the rule gets a made id, never its own.
	if !strings.Contains(m, "\n    n0[") || !strings.Contains(d, "\n    n0 [") {
		t.Errorf("the bad id's node is not n0:\n%s\n%s", m, d)
	}
	// In DOT the text is there, escaped.
	for _, want := range []string{`Boom\"] &amp; \\N \\G }; node [shape=none direction LR`, `nowhere\"] }`} {
		if !strings.Contains(d, want) {
			t.Errorf("dot lacks %s:\n%s", want, d)
		}
	}
}

// A U+202E (right-to-left override) that a Solution carries into a label
// is drawn as \u{202E} in both languages, never as the character or its
// Mermaid entity, whichever text carries it: a choice rule's operand and
// a fail step's error in a Solution the resolver accepts, a step id and a
// tool name in one it refuses, which is drawn all the same.
func TestBidirectionalCharactersAreWrittenOutInLabels(t *testing.T) {
	const head = "solution: bidi\nversion: 1\ninput: {type: object, properties: {x: {type: string, maxLength: 10}}}\nsteps:\n"
	cases := []struct {
		name, steps string
		accepted    bool
	}{
		{"a choice rule's operand", `  - id: pick
    choice:
      - when: {value: "${input.x}", equals: "txt.exe\u202Efdp"}
        next: done
    default: end
  - id: done
    succeed: {}
`, true},
		{"a fail step's error", `  - id: boom
    fail: {error: "Ok\u202Eliaf", cause: "x"}
`, true},
		{"a step id", `  - id: "send\u202Edne"
    succeed: {}
`, false},
		{"a tool name", `  - id: call
    tool: "send\u202Eliame"
`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := resolver.Compile("bidi.yaml", []byte(head+c.steps), resolver.Options{})
			if res.Graph == nil || res.OK() != c.accepted {
				t.Fatalf("graph %v, accepted %v (want %v): %v", res.Graph != nil, res.OK(), c.accepted, res.Diagnostics)
			}
			for f, want := range map[Format]string{Mermaid: "#92;u#123;202E#125;", DOT: `\\u{202E}`} {
				got := render(t, f, res)
				if strings.ContainsFunc(got, invisible.Is) || strings.Contains(got, "#8238;") {
					t.Errorf("%s draws the U+202E:\n%+q", f, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s does not write it out as %s:\n%s", f, want, got)
				}
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	res := compile(t, filepath.Join(solutionsDir, "human-approval.yaml"))
	var b bytes.Buffer
	if err := Write(&b, "svg", res.Graph, nil); err == nil || b.Len() > 0 {
		t.Fatalf("svg: %v, %d bytes", err, b.Len())
	}
}

// The picture docs/solutions.md shows is the golden one.
func TestDocsShowTheGoldenPicture(t *testing.T) {
	docs, err := os.ReadFile("../../docs/solutions.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(docs), "```mermaid\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/solutions.md has no mermaid block")
	}
	golden, err := os.ReadFile(filepath.Join(solutionsDir, "refuse-fallback.mmd"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(golden), block); diff != "" {
		t.Errorf("docs/solutions.md's picture is not refuse-fallback.mmd (-golden +docs):\n%s", diff)
	}
}

// Step ids are drawn whole, however long the grammar lets them be; other
// long labels keep their start and end and a digest of the whole text,
// so that two labels alike but in the middle are drawn apart; invisible
// characters are escaped before the cut, so one at the end stays shown.
func TestLongLabelsStayDistinguishable(t *testing.T) {
	a58, b70 := strings.Repeat("a", 58), strings.Repeat("b", 70)
	src := "solution: g\nversion: 1\nsteps:\n  - id: c\n    choice:\n" +
		"      - when: {value: \"${input.x}\", equals: \"" + b70 + "x" + b70 + "\"}\n        next: " + a58 + "_safe\n" +
		"      - when: {value: \"${input.x}\", equals: \"" + b70 + "y" + b70 + "\"}\n        next: " + a58 + "_send\n" +
		"      - when: {value: \"${input.x}\", equals: \"" + b70 + "\\u202e\"}\n        next: " + a58 + "_send\n" +
		"    default: " + a58 + "_safe\n  - id: " + a58 + "_safe\n    succeed: {}\n  - id: " + a58 + "_send\n    succeed: {}\n"
	res := resolver.Compile("g.yaml", []byte(src), resolver.Options{})
	if !res.OK() {
		t.Fatalf("refused: %v", res.Diagnostics)
	}
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			out := render(t, f, res)
			for _, id := range []string{a58 + "_safe", a58 + "_send"} {
				if !strings.Contains(out, `"`+id+`<br/>`) && !strings.Contains(out, `label="`+id+`\n`) {
					t.Errorf("step id %s is not drawn whole:\n%s", id, out)
				}
			}
			labels := regexp.MustCompile(`bbb\.\.\.[^"]*`).FindAllString(out, -1)
			if len(labels) != 3 || labels[0] == labels[1] {
				t.Errorf("the long operands are drawn %q, want three, the first two apart", labels)
			}
			if !strings.Contains(out, "202E") {
				t.Errorf("the U+202E at the end of a long operand is not shown:\n%s", out)
			}
		})
	}
}

// fit keeps a text of maxLabelRunes runes as it is shown, cuts a longer
// one to maxLabelRunes runes, and never cuts an escape in two.
func TestFitCutsNoEscape(t *testing.T) {
	for n := range 80 {
		for _, unit := range []string{"\u202e", "a\u200b", "\\u{", "é"} {
			s := strings.Repeat(unit, n)
			got := fit(s)
			if r := []rune(got); len(r) > maxLabelRunes && len(r) != len([]rune(shown(s))) {
				t.Fatalf("fit(%q) = %q: %d runes", s, got, len(r))
			}
			body := regexp.MustCompile(` #[0-9a-f]{8}$`).ReplaceAllString(got, "")
			if strings.Contains(body, "...") {
				for _, part := range strings.SplitN(body, "...", 2) {
					if strings.Count(shown(s), part) == 0 {
						t.Fatalf("fit(%q) = %q: %q is not a part of %q", s, got, part, shown(s))
					}
					if !strings.Contains(unit, `\`) && regexp.MustCompile(`\\u\{[0-9A-F]*$|^[0-9A-F]*\}|\\u?$|^u?\{`).MatchString(part) {
						t.Fatalf("fit(%q) = %q cuts an escape", s, got)
					}
				}
			}
		}
	}
}
