package platform

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
)

// The organisation's reviewer accounts are an explicit list, never a
// wildcard: the same list is review-decision's TOOLGATE_REVIEWER_ACCOUNTS
// (and publish's), and its resource policy lets exactly those accounts
// reach its Function URL, with AWS_IAM auth and only through the URL.
func TestReviewerAccountsOpenReviewDecisionsURLToThemOnly(t *testing.T) {
	cfg := testConfig()
	cfg.Stage = "orgs"
	cfg.ReviewerAccounts = []string{"111122223333", "444455556666"}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(nil)
	_, platform := NewApp(app, cfg, "testdata/assets")
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(platform.Stack, nil) }); err != nil {
		t.Fatal(err)
	}
	pj := *tpl.ToJSON()
	perms := resources(pj, "AWS::Lambda::Permission")
	type grant struct{ action, principal, condition string }
	var got []grant
	for _, r := range perms {
		p := props(r)
		// The relay's schedule on webhook-delivery, the stack's one
		// permission but these (TestTemplates/functions).
		if text(p["Principal"]) == "events.amazonaws.com" && text(p["FunctionName"]) == "${WebhookDeliveryFunction.Arn}" {
			continue
		}
		// webhook-receiver's public URL and its relay, checked apart
		// (TestInboundReceiverURL).
		if text(p["FunctionName"]) == "${WebhookReceiverFunction.Arn}" {
			continue
		}
		if text(p["FunctionName"]) != text(map[string]any{"Fn::GetAtt": []any{"ReviewDecisionFunction", "Arn"}}) {
			t.Errorf("a permission on another function: %s", text(p))
		}
		cond := ""
		if v, ok := p["FunctionUrlAuthType"]; ok {
			cond = "FunctionUrlAuthType=" + text(v)
		}
		if v, ok := p["InvokedViaFunctionUrl"]; ok {
			cond = "InvokedViaFunctionUrl=" + text(v)
		}
		got = append(got, grant{text(p["Action"]), text(p["Principal"]), cond})
	}
	want := map[grant]bool{
		{"lambda:InvokeFunctionUrl", "111122223333", "FunctionUrlAuthType=AWS_IAM"}: true,
		{"lambda:InvokeFunction", "111122223333", "InvokedViaFunctionUrl=true"}:     true,
		{"lambda:InvokeFunctionUrl", "444455556666", "FunctionUrlAuthType=AWS_IAM"}: true,
		{"lambda:InvokeFunction", "444455556666", "InvokedViaFunctionUrl=true"}:     true,
	}
	if len(got) != len(want) {
		t.Fatalf("permissions %+v, want %d", got, len(want))
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("permission %+v is not one of %v", g, want)
		}
	}
	for _, fn := range []string{"ReviewDecisionFunction", "PublishFunction"} {
		env := props(resources(pj, "AWS::Lambda::Function")[fn])["Environment"].(tmpl)["Variables"].(tmpl)
		if got := text(env[envReviewerAccounts]); got != "111122223333,444455556666" {
			t.Errorf("%s %s=%q", fn, envReviewerAccounts, got)
		}
	}
	for id, fn := range resources(pj, "AWS::Lambda::Function") {
		if id == "ReviewDecisionFunction" || id == "PublishFunction" {
			continue
		}
		if _, ok := props(fn)["Environment"].(tmpl)["Variables"].(tmpl)[envReviewerAccounts]; ok {
			t.Errorf("%s has %s: only review-decision admits reviewer accounts", id, envReviewerAccounts)
		}
	}
}

func TestReviewerAccountsRefuseWildcardsAndNonAccounts(t *testing.T) {
	for _, list := range [][]string{{"*"}, {"11112222333*"}, {"arn:aws:iam::111122223333:root"}, {"111122223333", "111122223333"}, {"1111"},
		{"111122223333,444455556666"}, {" 111122223333"}, {"111122223333", ""}} {
		cfg := testConfig()
		cfg.ReviewerAccounts = list
		err := cfg.check()
		if err == nil || !strings.Contains(err.Error(), "reviewerAccounts") {
			t.Errorf("reviewerAccounts %q: %q, want a reviewerAccounts refusal", list, err)
		}
	}
}
