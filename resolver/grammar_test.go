package resolver

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/toolgate/toolgate/shared/schema"
)

// holdsBindings is what BindingPatternECMA must agree with: the resolver
// reads s as a template with at least one binding, none of them an item
// binding named like a binding root (no for_each's as may be one).
func holdsBindings(s string) bool {
	segs, err := parseTemplate(s)
	if err != nil || !(boundString{segs}).bound() {
		return false
	}
	for _, sg := range segs {
		if sg.b != nil && sg.b.root == "item" && slices.Contains(bindingRoots, sg.b.step) {
			return false
		}
	}
	return true
}

// bindingCorpus is written bindings, valid and not, in and around text.
var bindingCorpus = []string{
	"${input}", "${input.a}", "${input.a.b[0]}", "${input.a[01]}", "${input[0]}", "${input.}", "${input..a}", "${input.9a}", "${input._a9}",
	"${input.a[1234567890]}", "${input.a[123456789]}",
	"${steps.fetch.output.data.items}", "${steps.fetch.error.Error}", "${steps.f}", "${steps}", "${steps.F}", "${steps.fX.a}", "${steps.f.Bc}",
	"${execution.id}", "${execution.name}", "${execution.start_time}", "${execution.foo}", "${execution}", "${execution.id.x}",
	"${reviews.r.decision}", "${reviews.r.reason}", "${reviews.r.approver}", "${reviews.r.answer}", "${reviews.r.answer.x[2]}",
	"${reviews.r.answerx}", "${reviews.r}", "${reviews}", "${reviews.r.other}", "${reviews.rB.decision}", "${reviews.aBc}",
	"${for_each.index}", "${for_each.index.x}", "${for_each}", "${for_each.x}", "${for_each.indexes}",
	"${item}", "${item.a.b}", "${order[3].id}", "${inputs.a}", "${stepsx}", "${executions.id}", "${for_eachx}", "${i}",
	"${" + strings.Repeat("a", 63) + "}", "${" + strings.Repeat("a", 64) + "}", "${steps." + strings.Repeat("b", 63) + ".output}", "${steps." + strings.Repeat("b", 64) + ".output}",
	"${}", "${ input }", "${input", "$input", "{input}", "plain text", "",
	"$${input}", "$$${input}", "$$$${input}", "$ ${input}", "${input}$", "${input}$$", "a${input}b${steps.x.output}c", "${input}${input}",
	"cost: $5 ${input.n}", "${input} and ${bad}", "${input.a}}", "{${input}}", "$${input} ${input}", "${a.b}${", "x\n${input}\n",
	"https://api.example.com/${input.path}", "${input.a-b}", "${Input}", "${9}", "${_a}",
}

func TestBindingPatternECMAAgreesWithTheResolversBindings(t *testing.T) {
	re2 := regexp.MustCompile(BindingPatternECMA)
	ecma, err := regexp2.Compile(BindingPatternECMA, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		t.Fatalf("BindingPatternECMA is not an ECMA-262 regexp: %v", err)
	}
	// The resolver's schema package compiles a pattern as RE2 when RE2
	// takes it and is small, else as ECMA-262 (shared/schema): as
	// solution.schema.json's binding definition, it agrees too.
	asSchema, err := schema.CompileValue(map[string]any{"type": "string", "pattern": BindingPatternECMA})
	if err != nil {
		t.Fatalf("shared/schema does not compile BindingPatternECMA: %v", err)
	}
	check := func(s string) {
		want := holdsBindings(s)
		if got := asSchema.Validate(s) == nil; got != want {
			t.Errorf("shared/schema: BindingPatternECMA matches %q: %v; the resolver reads a binding: %v", s, got, want)
		}
		if got := re2.MatchString(s); got != want {
			t.Errorf("Go regexp: BindingPatternECMA matches %q: %v; the resolver reads a binding: %v", s, got, want)
		}
		if got, err := ecma.MatchString(s); err != nil || got != want {
			t.Errorf("ECMA-262: BindingPatternECMA matches %q: %v (%v); the resolver reads a binding: %v", s, got, err, want)
		}
	}
	valid := 0
	for _, s := range bindingCorpus {
		check(s)
		if holdsBindings(s) {
			valid++
		}
	}
	if valid < 20 || valid > len(bindingCorpus)-20 {
		t.Fatalf("the corpus has %d valid bindings of %d: it must hold many of both", valid, len(bindingCorpus))
	}
	for _, s := range assembledBindings(20000) {
		check(s)
	}
}

// assembledBindings returns n strings assembled from the pieces bindings
// are made of, the same ones each time.
func assembledBindings(n int) []string {
	pieces := []string{"$", "$", "{", "}", "${", "$${", "input", "steps", ".", "x", "Y", "[0]", "[01]", "execution", "id", "reviews", "r", "decision", "answer", "for_each", "index", "_", "9", " "}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 1 + rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		out[i] = b.String()
	}
	return out
}

// An editor's YAML language server runs in Node.js and compiles a
// schema's pattern as a JavaScript RegExp with the "u" flag: there too,
// BindingPatternECMA agrees with the resolver. Node.js is what the
// TypeScript checks of the declarations run on (make deps installs it);
// without it the test is skipped, saying so.
func TestBindingPatternECMAAgreesInJavaScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the JavaScript engine's reading of BindingPatternECMA is not checked")
	}
	corpus := append(slices.Clone(bindingCorpus), assembledBindings(5000)...)
	in, err := json.Marshal(map[string]any{"pattern": BindingPatternECMA, "strings": corpus})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", `let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{const x=JSON.parse(d);const r=new RegExp(x.pattern,"u");process.stdout.write(JSON.stringify(x.strings.map(s=>r.test(s))))})`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []bool
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(corpus) {
		t.Fatalf("node answered %d results (%v), want %d", len(got), err, len(corpus))
	}
	for i, s := range corpus {
		if want := holdsBindings(s); got[i] != want {
			t.Errorf("JavaScript: BindingPatternECMA matches %q: %v; the resolver reads a binding: %v", s, got[i], want)
		}
	}
}

// FuzzBindingPatternECMA checks the agreement on any string: the Go and
// ECMA-262 engines match BindingPatternECMA where the resolver reads a
// template holding bindings, and nowhere else.
func FuzzBindingPatternECMA(f *testing.F) {
	for _, s := range bindingCorpus {
		f.Add(s)
	}
	re2 := regexp.MustCompile(BindingPatternECMA)
	ecma := regexp2.MustCompile(BindingPatternECMA, regexp2.ECMAScript|regexp2.Unicode)
	f.Fuzz(func(t *testing.T, s string) {
		want := holdsBindings(s)
		if got := re2.MatchString(s); got != want {
			t.Fatalf("Go regexp: BindingPatternECMA matches %q: %v; the resolver reads a binding: %v", s, got, want)
		}
		if got, err := ecma.MatchString(s); err == nil && got != want {
			t.Fatalf("ECMA-262: BindingPatternECMA matches %q: %v; the resolver reads a binding: %v", s, got, want)
		}
	})
}

func TestGrammarIsACopy(t *testing.T) {
	g := Grammar()
	g[GrammarSolution].Keys[0] = "changed"
	delete(g, GrammarPolicy)
	if Grammar()[GrammarSolution].Keys[0] == "changed" || len(Grammar()[GrammarPolicy].Keys) == 0 {
		t.Fatal("changing Grammar's result changed the grammar")
	}
}

// Every kind key has a step context, and the decoder's contexts are all
// in Grammar: an unknown key is refused in each of them.
func TestGrammarHasAContextPerStepKind(t *testing.T) {
	g := Grammar()
	for _, k := range KindKeys() {
		m, ok := g[GrammarStep(StepKind(k))]
		if !ok {
			t.Fatalf("no grammar context for step kind %s", k)
		}
		if !slices.Contains(m.Keys, k) || !slices.Contains(m.Keys, "id") {
			t.Errorf("step kind %s's keys %v lack its kind key or id", k, m.Keys)
		}
	}
	for ctx, m := range g {
		for _, r := range m.Required {
			if !slices.Contains(m.Keys, r) {
				t.Errorf("%s requires %q, which it does not allow", ctx, r)
			}
		}
	}
}
