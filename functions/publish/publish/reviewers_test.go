package publish_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// A reviewer pattern names its account at compile time (reviewer.CheckPattern);
// at publish, where the deployment's accounts are known, one naming any
// account review-decision does not admit is refused: it would admit nobody.
func TestPublishRefusesReviewersOfAccountsTheDeploymentDoesNotAdmit(t *testing.T) {
	const own, sibling, outside = "123456789012", "111122223333", "999999999999"
	env := map[string]string{
		publishapi.EnvTable: "toolgate-test", publishapi.EnvStage: "test", publish.EnvRecipientAllow: "@example.com",
		"AWS_REGION": "eu-west-1", caller.EnvAccount: own, caller.EnvReviewerAccounts: sibling,
	}
	cfg, err := publish.FunctionConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		reviewers []string
		refused   []string
	}{
		{"no reviewers", nil, nil},
		{"the deployment's own account", []string{"arn:aws:sts::" + own + ":assumed-role/editors/*"}, nil},
		{"a reviewer account", []string{"arn:aws:iam::" + sibling + ":role/reviewers"}, nil},
		{"another account", []string{"arn:aws:iam::" + outside + ":user/mallory"}, []string{outside}},
		{"one of three names another account", []string{"arn:aws:iam::" + own + ":user/a", "arn:aws:iam::" + outside + ":user/b", "arn:aws:iam::" + sibling + ":user/c"}, []string{outside}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sol := mailSolution(map[string]any{"to": []string{"team@example.com"}, "subject": "s", "text": "t"})
			if c.reviewers != nil {
				sol["steps"].([]any)[0].(map[string]any)["review"].(map[string]any)["reviewers"] = c.reviewers
			}
			res := compile(t, sol)
			if !res.OK() {
				t.Fatalf("check: %v", res.Diagnostics)
			}
			ds := cfg.Deployment.Check(res)
			if len(ds) != len(c.refused) {
				t.Fatalf("publish: %v, want %d refusal(s)", ds, len(c.refused))
			}
			for i, d := range ds {
				if d.Rule != resolver.RuleReviewerPattern || !strings.Contains(d.Message, c.refused[i]) || !strings.Contains(d.Message, "review.reviewers[") {
					t.Errorf("diagnostic %v: want [%s] naming account %s and the field", d, resolver.RuleReviewerPattern, c.refused[i])
				}
			}
		})
	}
	// The zero Deployment admits no account (default deny).
	res := compile(t, func() map[string]any {
		sol := mailSolution(map[string]any{"to": []string{"team@example.com"}, "subject": "s", "text": "t"})
		sol["steps"].([]any)[0].(map[string]any)["review"].(map[string]any)["reviewers"] = []string{"arn:aws:iam::" + own + ":user/a"}
		return sol
	}())
	var refused []string
	for _, d := range (publish.Deployment{}).Check(res) {
		refused = append(refused, d.Rule)
	}
	if !slices.Contains(refused, resolver.RuleReviewerPattern) {
		t.Fatalf("the zero Deployment: %v, want a [%s] refusal", refused, resolver.RuleReviewerPattern)
	}
}
