package review_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/review"
)

var updateNotices = flag.Bool("update", false, "rewrite testdata/notice-*.txt from the notices composed")

// The notice of a call review and of a show review have a fixed form
// (testdata/notice-call.txt, notice-show.txt; -update rewrites them): the
// subject names the review, the Solution (the state machine's name
// without the stage's prefix) and the step; the body the tool and its
// step, or that the review shows values, the expiry and the commands.
func TestNoticeHasTheFixedForm(t *testing.T) {
	expires := time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC)
	run := "arn:aws:states:eu-west-1:123456789012:execution:toolgate-prod_weekly-digest:run-7"
	for _, c := range []struct {
		name string
		r    review.Review
	}{
		{"call", review.Review{ID: "rv_0123456789abcdef", RunID: run, Step: "approve", Of: "send", Tool: "send-email", ExpiresAt: expires,
			Input: []byte(`{"subject":"CANARY-SECRET"}`)}},
		{"show", review.Review{ID: "rv_fedcba9876543210", RunID: run, Step: "check_totals", ExpiresAt: expires}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := review.NoticeOf(&c.r, "prod")
			got := "Subject: " + n.Subject() + "\n\n" + n.Text()
			if strings.Contains(got, "CANARY") {
				t.Fatalf("the notice holds the reviewed input:\n%s", got)
			}
			path := filepath.Join("testdata", "notice-"+c.name+".txt")
			if *updateNotices {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("notice:\n%s\nwant (%s):\n%s", got, path, want)
			}
		})
	}
}

// A run id whose state machine is not of the stage names the whole state
// machine; a run id that is no execution ARN names no Solution.
func TestNoticeOfNamesTheSolutionFromTheRunID(t *testing.T) {
	for _, c := range []struct{ run, stage, want string }{
		{"arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_digest:r", "dev", "digest"},
		{"arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_digest:r", "prod", "toolgate-dev_digest"},
		{"arn:aws:states:us-east-1:123456789012:execution:weekly-digest:r", "dev", "weekly-digest"},
		{"direct:abc", "dev", ""},
	} {
		if got := review.NoticeOf(&review.Review{RunID: c.run}, c.stage).Solution; got != c.want {
			t.Errorf("NoticeOf(%s, %s).Solution = %q, want %q", c.run, c.stage, got, c.want)
		}
	}
}

// NoticeRecipients keeps the addresses the allow-list admits, canonical
// and once each, in the order written, and reports the others (and what
// is no addr-spec) by position only.
func TestNoticeRecipientsKeepsWhatTheAllowListAdmits(t *testing.T) {
	allow, err := recipient.ParseList([]string{"ops@example.com", "@reviewers.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		notify  []string
		kept    []string
		skipped []int
	}{
		{"an address entry and a domain entry", []string{"ops@example.com", "ann@reviewers.example.com"},
			[]string{"ops@example.com", "ann@reviewers.example.com"}, nil},
		{"another domain is skipped", []string{"ops@example.com", "someone@elsewhere.example"}, []string{"ops@example.com"}, []int{1}},
		{"a subdomain is not the domain", []string{"bob@eu.reviewers.example.com"}, nil, []int{0}},
		{"case and duplicates", []string{"OPS@Example.COM", "ops@example.com"}, []string{"ops@example.com"}, nil},
		{"no addr-spec", []string{"Ops <ops@example.com>", "", "ops@example.com"}, []string{"ops@example.com"}, []int{0, 1}},
		{"nothing admitted", []string{"a@b.example"}, nil, []int{0}},
		{"none", nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			kept, skipped := review.NoticeRecipients(allow, c.notify)
			if !slices.Equal(kept, c.kept) || !slices.Equal(skipped, c.skipped) {
				t.Errorf("NoticeRecipients(%q) = %q, %v; want %q, %v", c.notify, kept, skipped, c.kept, c.skipped)
			}
		})
	}
	if kept, skipped := review.NoticeRecipients(recipient.List{}, []string{"ops@example.com"}); kept != nil || !slices.Equal(skipped, []int{0}) {
		t.Errorf("the zero List admitted %q", kept)
	}
}
