package platform

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// synthPlatform synthesizes cfg's platform stack.
func synthPlatform(t *testing.T, cfg Config) (assertions.Template, tmpl) {
	t.Helper()
	var tpl assertions.Template
	if err := try(func() {
		_, platform := NewApp(awscdk.NewApp(nil), cfg, filepath.Join("testdata", "assets"))
		tpl = assertions.Template_FromStack(platform.Stack, nil)
	}); err != nil {
		t.Fatal(err)
	}
	return tpl, *tpl.ToJSON()
}

// TestRecipientCondition: send-email's SES statement carries the
// allow-list of testConfig (@example.org, Ops@Example.com, @bücher.example)
// as IAM patterns in canonical form: the address lower-cased, the Unicode
// domain as its A-label, domain entries as *@domain.
func TestRecipientCondition(t *testing.T) {
	if err := try(func() {
		platformTemplate.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Sid":      "SendAsTheSenderOnly",
				"Action":   "ses:SendEmail",
				"Effect":   "Allow",
				"Resource": assertions.Match_AnyValue(),
				"Condition": map[string]any{
					"StringEquals":            map[string]any{"ses:FromAddress": "noreply@mail.example.org"},
					"ForAllValues:StringLike": map[string]any{"ses:Recipients": []any{"*@example.org", "ops@example.com", "*@xn--bcher-kva.example"}},
				},
			}})},
		})
	}); err != nil {
		t.Fatal(err)
	}
}

// wantRecipients is the ses:Recipients condition of testConfig's
// allow-list, as JSON.
const wantRecipients = `["*@example.org","ops@example.com","*@xn--bcher-kva.example"]`

// Conservative lengths of what a deployed policy holds in place of the
// template's intrinsics: the longest partition, a 14-character region
// (ap-southeast-5), an account id, a stage of 20 characters, and for any
// other Ref or Fn::GetAtt (send-email's log group ARN, about 130
// characters: arn:…:log-group:Toolgate-<stage>-SendEmailFunctionLogs<hash>-<suffix>:*)
// 256 characters.
const (
	longestPartition = "aws-us-gov"
	longestRegion    = "ap-southeast-5"
	longestStage     = "abcdefghijklmnopqrst"
	maxAttribute     = 256
	// The longest sender (a 64-octet local part at a 253-octet domain)
	// and sender identity (a 253-octet domain).
	longestSender   = 64 + 1 + 253
	longestIdentity = 253
)

// deployedChars estimates from above the characters IAM counts for a
// policy document of the test template once deployed: its JSON without
// whitespace, intrinsics at their longest, and the test's sender and
// identity grown to the longest there may be.
func deployedChars(doc any, sender, identity string) int {
	var resolve func(v any) any
	resolve = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			if sub, ok := v["Fn::Sub"].(string); ok && len(v) == 1 {
				return strings.NewReplacer("${AWS::Partition}", longestPartition, "${AWS::Region}", longestRegion,
					"${AWS::AccountId}", "123456789012", "toolgate-test", "toolgate-"+longestStage).Replace(sub)
			}
			for k := range v {
				if len(v) == 1 && (k == "Ref" || strings.HasPrefix(k, "Fn::")) {
					return strings.Repeat("x", maxAttribute)
				}
			}
			m := map[string]any{}
			for k, x := range v {
				m[k] = resolve(x)
			}
			return m
		case []any:
			l := make([]any, len(v))
			for i, x := range v {
				l[i] = resolve(x)
			}
			return l
		case string:
			return strings.ReplaceAll(v, "toolgate-test", "toolgate-"+longestStage)
		}
		return v
	}
	b, err := json.Marshal(resolve(doc))
	if err != nil {
		panic(err)
	}
	return len(b) + strings.Count(string(b), sender)*(longestSender-len(sender)) +
		strings.Count(string(b), identity)*(longestIdentity-len(identity))
}

// TestRecipientConditionBudget: the rest of send-email's policy, at its
// longest once deployed, leaves maxRecipientConditionChars of IAM's limit
// on a role's inline policies (conditionBudget.check).
func TestRecipientConditionBudget(t *testing.T) {
	conditionBudget{fn: "SendEmailFunction", sid: "SendAsTheSenderOnly", key: "recipientAllow", max: maxRecipientConditionChars,
		set: func(c *Config, l []string) { c.RecipientAllow = l }}.check(t)
}

// conditionBudget is a role's ses:Recipients condition built from an
// allow-list of platform configuration: function fn's role, its
// statement sid, the configuration key and field (set), and the
// characters the condition may take of IAM's limit on a role's inline
// policies.
type conditionBudget struct {
	fn, sid, key string
	max          int
	set          func(*Config, []string)
}

// check: the rest of the role's policy, at its longest once deployed,
// leaves b.max of IAM's limit; a list that fills the budget synthesizes
// one inline policy under the limit (the CDK moves nothing to a managed
// policy), and one entry more is refused by the configuration's check,
// naming the key, the size and the limit.
func (b conditionBudget) check(t *testing.T) {
	t.Helper()
	const sender, identity = "noreply@mail.example.org", "example.org"
	doc := clone(rolePolicy(t, platformJSON, b.fn))
	for _, s := range statements(doc) {
		if s["Sid"] == b.sid {
			delete(s["Condition"].(tmpl), "ForAllValues:StringLike")
		}
	}
	rest := deployedChars(doc, sender, identity)
	t.Logf("%s's policy without the recipients: at most %d characters deployed; the recipients may take %d of %d", b.fn, rest, b.max, rolePolicyChars)
	if rest+b.max > rolePolicyChars {
		t.Fatalf("%s's policy takes up to %d characters without its recipients: with a full recipients condition (%d) it would pass IAM's %d",
			b.fn, rest, b.max, rolePolicyChars)
	}

	// The longest allow-list within the budget, of domain entries.
	var allow []string
	for i := 0; ; i++ {
		next := append(allow, fmt.Sprintf("@d%04d.example.com", i))
		if recipientConditionChars(patternsOf(t, next)) > b.max {
			break
		}
		allow = next
	}
	cfg := testConfig()
	b.set(&cfg, allow)
	if err := cfg.check(); err != nil {
		t.Fatalf("%d entries within the budget: %v", len(allow), err)
	}
	_, pj := synthPlatform(t, cfg)
	if n := len(resources(pj, "AWS::IAM::ManagedPolicy")); n != wantPlatformCounts["AWS::IAM::ManagedPolicy"] {
		t.Errorf("%d managed policies: the CDK moved statements out of a role's inline policy", n)
	}
	if got := deployedChars(rolePolicy(t, pj, b.fn), sender, identity); got > rolePolicyChars {
		t.Errorf("with %d entries %s's policy takes up to %d characters, over %d", len(allow), b.fn, got, rolePolicyChars)
	} else {
		t.Logf("%d domain entries: %s's policy takes up to %d characters deployed", len(allow), b.fn, got)
	}

	cfg = testConfig()
	over := append(allow, "@one-more.example.com")
	b.set(&cfg, over)
	err := cfg.check()
	n := recipientConditionChars(patternsOf(t, over))
	want := regexp.MustCompile(fmt.Sprintf(`%s: %d entries .* about %d characters, over the %d .* IAM's %d-character limit`,
		b.key, len(over), n, b.max, rolePolicyChars))
	if err == nil || !want.MatchString(err.Error()) {
		t.Fatalf("one entry over the budget: error %v, want one matching %s", err, want)
	}
}

func patternsOf(t *testing.T, allow []string) []string {
	t.Helper()
	p, err := recipientPatterns(allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
