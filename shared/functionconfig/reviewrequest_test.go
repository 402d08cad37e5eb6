package functionconfig_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/review"
)

// reviewRequestEnv is a review-request environment that parses, with more
// on top.
func reviewRequestEnv(more map[string]string) func(string) string {
	env := map[string]string{review.EnvTable: "toolgate-dev", functionconfig.EnvRegion: "us-east-1", "TOOLGATE_STAGE": "dev",
		caller.EnvAccount: "123456789012", functionconfig.EnvExternalKeyParam: functionconfig.ExternalKeyParam("dev")}
	for k, v := range more {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

// review-request reads the end-user mapping with the deployment's account
// and the end-user key's parameter; a mapping with entries needs the key,
// and one naming another account stops the function at cold start.
func TestReviewRequestReadsTheEndUserMapping(t *testing.T) {
	const mapping = `[{"principal": "arn:aws:iam::123456789012:role/support", "endUser": "customer-*"}]`
	cfg, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(map[string]string{enduser.EnvMapping: mapping, enduser.EnvKeyParam: functionconfig.EndUserKeyParam("dev")}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.EndUsers.MayActFor("arn:aws:iam::123456789012:role/support", "customer-1") || cfg.EndUserKeyParam != "/toolgate/dev/secret/end-user-key" {
		t.Fatalf("config %+v does not hold the mapping and the key's parameter", cfg)
	}
	if cfg, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(nil)); err != nil || len(cfg.EndUsers.Entries) != 0 || cfg.EndUserKeyParam != "" {
		t.Fatalf("no mapping and no key: %+v, %v; want neither, and no error", cfg, err)
	}
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"entries without the key": {map[string]string{enduser.EnvMapping: mapping}, enduser.EnvKeyParam + " is not set"},
		"another account": {map[string]string{enduser.EnvMapping: strings.ReplaceAll(mapping, "123456789012", "210987654321"), enduser.EnvKeyParam: "/k"},
			enduser.EnvMapping + ": end-user mapping: entry 0: principal"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(c.env)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// review-request reads the notices allow-list and the sender: none sends
// no notice; a list needs the sender; a bad entry or sender stops the
// function at cold start, naming the variable and the entry.
func TestReviewRequestReadsTheReviewNotices(t *testing.T) {
	cfg, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(map[string]string{
		functionconfig.EnvReviewNotices: `["ops@example.com", "@Reviewers.example.com"]`, functionconfig.EnvNoticeSender: "Toolgate@Example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Notices.On() || cfg.Notices.Sender != "Toolgate@example.com" ||
		strings.Join(cfg.Notices.Allow.Entries(), ",") != "ops@example.com,@reviewers.example.com" {
		t.Fatalf("notices %+v", cfg.Notices)
	}
	for _, none := range []string{"", "[]"} {
		cfg, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(map[string]string{functionconfig.EnvReviewNotices: none}))
		if err != nil || cfg.Notices.On() {
			t.Fatalf("notices %q: %+v, %v; want none and no error", none, cfg.Notices, err)
		}
	}
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"no sender":            {map[string]string{functionconfig.EnvReviewNotices: `["ops@example.com"]`}, "no sender"},
		"not JSON":             {map[string]string{functionconfig.EnvReviewNotices: `ops@example.com`}, "is not a JSON list"},
		"a bad entry":          {map[string]string{functionconfig.EnvReviewNotices: `["ops@example.com", "*.example.com"]`, functionconfig.EnvNoticeSender: "a@example.com"}, "entry 1"},
		"a bad sender":         {map[string]string{functionconfig.EnvReviewNotices: `["ops@example.com"]`, functionconfig.EnvNoticeSender: "Ops <a@example.com>"}, "the sender"},
		"a subdomain wildcard": {map[string]string{functionconfig.EnvReviewNotices: `["@*.example.com"]`, functionconfig.EnvNoticeSender: "a@example.com"}, "exact domain"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(c.env)); err == nil || !strings.Contains(err.Error(), c.want) ||
				!strings.Contains(err.Error(), functionconfig.EnvReviewNotices) {
				t.Fatalf("%v, want an error naming %s and saying %q", err, functionconfig.EnvReviewNotices, c.want)
			}
		})
	}
}

// Notices are sent as send-email sends, under the SES identity that
// authorises the sender when the platform names one (sending
// authorisation, a sender of another account's identity): one that does
// not cover the sender stops the function at cold start.
func TestReviewRequestReadsTheNoticeSendersIdentity(t *testing.T) {
	base := map[string]string{functionconfig.EnvReviewNotices: `["ops@example.com"]`, functionconfig.EnvNoticeSender: "toolgate@example.com"}
	with := func(arn string) map[string]string {
		m := map[string]string{functionconfig.EnvSenderIdentityARN: arn}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	const arn = "arn:aws:ses:us-east-1:210987654321:identity/example.com"
	cfg, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(with(arn)))
	if err != nil || cfg.Notices.IdentityARN != arn {
		t.Fatalf("notices %+v, %v; want the identity %s", cfg.Notices, err, arn)
	}
	if cfg, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(base)); err != nil || cfg.Notices.IdentityARN != "" {
		t.Fatalf("without an identity: %+v, %v", cfg.Notices, err)
	}
	if _, err := functionconfig.ReviewRequestFromEnv(reviewRequestEnv(with("arn:aws:ses:us-east-1:210987654321:identity/other.example"))); err == nil || !strings.Contains(err.Error(), functionconfig.EnvSenderIdentityARN) {
		t.Fatalf("an identity of another domain: %v; want an error naming %s", err, functionconfig.EnvSenderIdentityARN)
	}
}
