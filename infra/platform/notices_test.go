package platform

import (
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// rolePolicy is the one inline policy document of the role of the
// function whose logical id is fn.
func rolePolicy(t *testing.T, pj tmpl, fn string) tmpl {
	t.Helper()
	role := symbol(roleOf(pj, fn))
	var docs []tmpl
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			if text(r) == "${"+role+"}" {
				docs = append(docs, props(p)["PolicyDocument"].(tmpl))
			}
		}
	}
	if len(docs) != 1 {
		t.Fatalf("%s's role has %d policies, want 1", fn, len(docs))
	}
	return docs[0]
}

// reviewRequestEnv is review-request's environment in pj.
func reviewRequestEnv(pj tmpl) tmpl {
	return props(resources(pj, "AWS::Lambda::Function")["ReviewRequestFunction"])["Environment"].(tmpl)["Variables"].(tmpl)
}

// TestReviewNoticesCondition: with toolgate:reviewNotices, review-request's
// role may ses:SendEmail from the platform's sender only
// (StringEquals ses:FromAddress) to the list's IAM patterns only
// (ForAllValues:StringLike ses:Recipients: the address lower-cased, a
// domain entry as *@domain), and its environment names the list and the
// sender.
func TestReviewNoticesCondition(t *testing.T) {
	if err := try(func() {
		platformTemplate.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"Roles": []any{map[string]any{"Ref": roleOf(platformJSON, "ReviewRequestFunction")}},
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Sid":      "SendReviewNoticesAsTheSenderOnly",
				"Action":   "ses:SendEmail",
				"Effect":   "Allow",
				"Resource": assertions.Match_AnyValue(),
				"Condition": map[string]any{
					"StringEquals":            map[string]any{"ses:FromAddress": "noreply@mail.example.org"},
					"ForAllValues:StringLike": map[string]any{"ses:Recipients": []any{"ops@example.com", "*@reviewers.example.org"}},
				},
			}})},
		})
	}); err != nil {
		t.Fatal(err)
	}
	env := reviewRequestEnv(platformJSON)
	if got := text(env[functionconfig.EnvReviewNotices]); got != `["Ops@Example.com","@reviewers.example.org"]` {
		t.Errorf("%s=%s", functionconfig.EnvReviewNotices, got)
	}
	if got := text(env[functionconfig.EnvNoticeSender]); got != "noreply@mail.example.org" {
		t.Errorf("%s=%s", functionconfig.EnvNoticeSender, got)
	}
	// Only review-request sends notices.
	for id, fn := range resources(platformJSON, "AWS::Lambda::Function") {
		if _, ok := props(fn)["Environment"].(tmpl)["Variables"].(tmpl)[functionconfig.EnvReviewNotices]; ok && id != "ReviewRequestFunction" {
			t.Errorf("%s has %s", id, functionconfig.EnvReviewNotices)
		}
	}
}

// TestReviewRequestHasNoSESWithoutReviewNotices: without
// toolgate:reviewNotices (the default) review-request's role holds no SES
// action at all and its environment no notices variable.
func TestReviewRequestHasNoSESWithoutReviewNotices(t *testing.T) {
	cfg := testConfig()
	cfg.ReviewNotices = nil
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	_, pj := synthPlatform(t, cfg)
	for _, s := range statements(rolePolicy(t, pj, "ReviewRequestFunction")) {
		if strings.Contains(text(s["Action"]), "ses:") {
			t.Errorf("review-request's role has an SES statement without notices: %s", text(s))
		}
	}
	env := reviewRequestEnv(pj)
	for _, k := range []string{functionconfig.EnvReviewNotices, functionconfig.EnvNoticeSender} {
		if _, ok := env[k]; ok {
			t.Errorf("review-request has %s without notices", k)
		}
	}
}

// TestReviewNoticesRefusals: the configuration's check refuses what
// review-request would refuse at cold start, naming reviewNotices and the
// entry.
func TestReviewNoticesRefusals(t *testing.T) {
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"ops@example.com", "@*.example.com"}, "reviewNotices: review notices: recipient allow-list entry 1"},
		{[]string{"Ops <ops@example.com>"}, "reviewNotices: review notices: recipient allow-list entry 0"},
		{[]string{"*@example.com"}, `write "@domain"`},
	} {
		cfg := testConfig()
		cfg.ReviewNotices = c.list
		if err := cfg.check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reviewNotices %q: %v, want an error saying %q", c.list, err, c.want)
		}
	}
}

// TestNoticeConditionBudget: the rest of review-request's policy, at its
// longest once deployed, leaves maxNoticeConditionChars of IAM's limit on
// a role's inline policies (conditionBudget.check).
func TestNoticeConditionBudget(t *testing.T) {
	conditionBudget{fn: "ReviewRequestFunction", sid: "SendReviewNoticesAsTheSenderOnly", key: "reviewNotices", max: maxNoticeConditionChars,
		set: func(c *Config, l []string) { c.ReviewNotices = l }}.check(t)
}
