package platform

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/google/go-cmp/cmp"
)

// summaryGolden records, per configuration and stack, what a change to
// how the app is laid out (files, packages, constructs) must not change:
// every resource's logical ID and type, and every IAM policy statement
// (docs/infra.md, "Template equivalence"). A logical ID that changes
// replaces its resource on deploy; for the ledger table or an SSM
// parameter that loses data.
const summaryGolden = "testdata/template-summary.golden"

// TestTemplateSummary synthesizes the test configuration (testConfig) and
// the configuration of a bare cdk synth (no context) and compares each
// stack's summary with summaryGolden; go test ./infra/platform -run
// TestTemplateSummary -update rewrites it.
func TestTemplateSummary(t *testing.T) {
	var b strings.Builder
	b.WriteString(summary("test", map[string]tmpl{ledgerStackName("test"): ledgerJSON, platformStackName("test"): platformJSON}))
	cfg, err := LoadConfig(func(string) any { return nil })
	if err != nil {
		t.Fatal(err)
	}
	stacks := map[string]tmpl{}
	if err := try(func() {
		app := awscdk.NewApp(nil)
		ledger, platform := NewApp(app, cfg, filepath.Join("testdata", "assets"))
		stacks[ledgerStackName(cfg.Stage)] = *assertions.Template_FromStack(ledger.Stack, nil).ToJSON()
		stacks[platformStackName(cfg.Stage)] = *assertions.Template_FromStack(platform.Stack, nil).ToJSON()
	}); err != nil {
		t.Fatal(err)
	}
	b.WriteString(summary("default", stacks))
	got := b.String()
	if *update {
		if err := os.WriteFile(summaryGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(summaryGolden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("template summary differs from %s (-want +got); a changed logical ID must be explained in docs/infra.md before -update:\n%s", summaryGolden, d)
	}
}

// versionHash is the hash the Lambda construct appends to a function
// version's logical ID: it hashes the function's configuration, which
// the summary shows otherwise.
var versionHash = regexp.MustCompile(`(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}$`)

// summaryID is a logical ID as the summary writes it: as is, but for a
// function version's configuration hash.
func summaryID(id string) string { return versionHash.ReplaceAllString(id, "${1}<config-hash>") }

// summary writes, for each stack of one configuration in name order, its
// resource types with their counts, its resources' logical IDs with
// their types, and its IAM statements (identity policies, managed
// policies, trust policies and Lambda permissions), sorted.
func summary(config string, stacks map[string]tmpl) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(stacks)) {
		rs, _ := stacks[name]["Resources"].(map[string]any)
		fmt.Fprintf(&b, "== configuration %s, stack %s\n-- resource types\n", config, name)
		counts := map[string]int{}
		var ids []string
		for id, r := range rs {
			typ, _ := r.(tmpl)["Type"].(string)
			counts[typ]++
			ids = append(ids, summaryID(id)+" "+typ)
		}
		for _, typ := range slices.Sorted(maps.Keys(counts)) {
			fmt.Fprintf(&b, "%s %d\n", typ, counts[typ])
		}
		b.WriteString("-- logical ids\n")
		slices.Sort(ids)
		for _, l := range ids {
			b.WriteString(l + "\n")
		}
		b.WriteString("-- statements\n")
		var lines []string
		for id, r := range rs {
			lines = append(lines, summaryStatements(summaryID(id), r.(tmpl))...)
		}
		slices.Sort(lines)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// summaryStatements renders the IAM statements resource r (logical ID id)
// holds, one line each: owner, Sid, effect, sorted actions, sorted
// resources and principals, condition.
func summaryStatements(id string, r tmpl) []string {
	p, _ := r["Properties"].(tmpl)
	var out []string
	doc := func(owner string, d any) {
		for _, s := range statements(d) {
			out = append(out, summaryStatement(owner, s))
		}
	}
	switch r["Type"] {
	case "AWS::IAM::Policy":
		var roles []string
		for _, x := range asList(p["Roles"]) {
			roles = append(roles, summaryText(x))
		}
		doc("policy "+id+" of "+strings.Join(roles, ","), p["PolicyDocument"])
	case "AWS::IAM::ManagedPolicy":
		doc("managed-policy "+id, p["PolicyDocument"])
	case "AWS::IAM::Role":
		doc("trust "+id, p["AssumeRolePolicyDocument"])
		for _, x := range asList(p["Policies"]) {
			doc("inline "+id, x.(tmpl)["PolicyDocument"])
		}
		for _, x := range asList(p["ManagedPolicyArns"]) {
			out = append(out, "managed-policy-arn "+id+" "+summaryText(x))
		}
	case "AWS::Lambda::Permission":
		rest := map[string]any{}
		for k, v := range p {
			if k != "Action" && k != "FunctionName" && k != "Principal" {
				rest[k] = summaryTree(v)
			}
		}
		c, _ := json.Marshal(rest)
		out = append(out, fmt.Sprintf("permission %s Allow [%s] on %s to %s %s", id, summaryText(p["Action"]),
			summaryText(p["FunctionName"]), summaryText(p["Principal"]), c))
	}
	return out
}

func summaryStatement(owner string, s tmpl) string {
	list := func(keys ...string) string {
		var l []string
		for _, k := range keys {
			v, ok := s[k]
			if !ok {
				continue
			}
			if m, isMap := v.(tmpl); isMap && k == "Principal" {
				for _, pk := range slices.Sorted(maps.Keys(m)) {
					for _, x := range summaryList(m[pk]) {
						l = append(l, pk+":"+x)
					}
				}
				continue
			}
			for _, x := range summaryList(v) {
				l = append(l, k+":"+x)
			}
		}
		slices.Sort(l)
		return "[" + strings.Join(l, " ") + "]"
	}
	c := ""
	if v, ok := s["Condition"]; ok {
		b, _ := json.Marshal(summaryTree(v))
		c = " if " + string(b)
	}
	sid, _ := s["Sid"].(string)
	effect, _ := s["Effect"].(string)
	return fmt.Sprintf("%s sid=%s %s %s on %s by %s%s", owner, sid, effect, list("Action", "NotAction"),
		list("Resource", "NotResource"), list("Principal"), c)
}

// summaryList renders a string or a list of values.
func summaryList(v any) []string {
	if l, ok := v.([]any); ok {
		var out []string
		for _, x := range l {
			out = append(out, summaryText(x))
		}
		return out
	}
	return []string{summaryText(v)}
}

// summaryText renders a template value as text: Fn::Sub keeps its text,
// Ref X is ${X}, Fn::GetAtt [X, A] is ${X.A}, Fn::Join joins (logical IDs
// through summaryID); anything else is its JSON.
func summaryText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case tmpl:
		if len(v) == 1 {
			for k, arg := range v {
				switch k {
				case "Fn::Sub":
					if s, ok := arg.(string); ok {
						return s
					}
				case "Ref":
					if s, ok := arg.(string); ok {
						return "${" + summaryID(s) + "}"
					}
				case "Fn::GetAtt":
					if a, ok := arg.([]any); ok && len(a) == 2 {
						return "${" + summaryID(a[0].(string)) + "." + a[1].(string) + "}"
					}
				case "Fn::Join":
					if a, ok := arg.([]any); ok && len(a) == 2 {
						var s []string
						for _, p := range asList(a[1]) {
							s = append(s, summaryText(p))
						}
						return strings.Join(s, a[0].(string))
					}
				}
			}
		}
	}
	b, _ := json.Marshal(summaryTree(v))
	return string(b)
}

// summaryTree renders the intrinsic values inside v with summaryText,
// keeping its shape.
func summaryTree(v any) any { return intrinsicTree(v, summaryText) }
