package functions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/toolset"
)

// noticeCanary is a value of the reviewed input that no notice may hold.
const noticeCanary = "CANARY-7f3e-not-for-mail"

// newNoticeStack is review-request under the RIE on dynalite, with the
// notices allow-list of the local stack (ops@example.com,
// @reviewers.example.com) and its SES v2 endpoint at ses ("": the SES
// emulator, which the stack's ses holds).
func newNoticeStack(t *testing.T, ses string) (*reviewStack, *dynamodb.Client) {
	t.Helper()
	p, db, tableName := localtest.SharedTable(t, "toolgate-notice")
	s := &reviewStack{dynamo: p.Endpoint(), store: ledger.New(db, tableName), reviews: dynamo.NewStore(db, tableName)}
	var err error
	if s.ts, err = toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.RegisterToolset(context.Background(), s.ts); err != nil {
		t.Fatal(err)
	}
	s.callers = localtest.StartCallers(t)
	s.ses = localtest.SES(t)
	if ses == "" {
		ses = s.ses.Endpoint()
	}
	env := s.callers.Env(map[string]string{dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(), "TOOLGATE_STAGE": "dev",
		functionconfig.EnvReviewNotices: `["ops@example.com", "@reviewers.example.com"]`, functionconfig.EnvNoticeSender: "toolgate-demo@example.com",
		"AWS_ENDPOINT_URL_SESV2": ses})
	s.request = localtest.RIE(t, "review-request", localtest.Bootstrap(t, "./review-request"), 10*time.Second, env)
	return s, db
}

// noticeItem reads review id's notice item whole (the test's own read:
// review-request never reads one back).
func noticeItem(t *testing.T, db *dynamodb.Client, tableName, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(tableName), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Notice.Key(id)},
			table.SK: &types.AttributeValueMemberS{Value: table.Notice.SKValue}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func attrS(item map[string]types.AttributeValue, n string) string {
	if v, ok := item[n].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(item map[string]types.AttributeValue, n string) string {
	if v, ok := item[n].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// A review Task whose notify names an address the notices allow-list
// admits and one it does not: SES receives ONE message, from the
// platform's sender, to the admitted address only, naming the review and
// holding none of the reviewed input's values; the notice item records
// SENT with the counts; the same Task asking again sends nothing more.
func TestReviewRequestSendsOneNoticeToTheAllowedAddressesOnly(t *testing.T) {
	s, db := newNoticeStack(t, "")
	task := s.task(t, "tok-notice-1", func(m map[string]any) {
		m["input"] = map[string]any{"to": []string{"team@example.com"}, "subject": noticeCanary, "text": noticeCanary}
		m["notify"] = []string{"ops@example.com", "someone@elsewhere.example"}
	})
	id := s.requestReview(t, task)
	mails := localtest.Mails(t, s.ses)
	if len(mails) != 1 {
		t.Fatalf("%d messages, want 1: %+v", len(mails), mails)
	}
	m := mails[0]
	if strings.Join(m.Destination.To, ",") != "ops@example.com" || len(m.Destination.Cc)+len(m.Destination.Bcc) != 0 {
		t.Errorf("sent to %+v, want ops@example.com only", m.Destination)
	}
	if m.From != "toolgate-demo@example.com" {
		t.Errorf("from %q, want the platform's sender", m.From)
	}
	if !strings.Contains(m.Subject, id) || !strings.Contains(m.Body.Text, id) || !strings.Contains(m.Body.Text, "toolgate review show "+id) {
		t.Errorf("the notice does not name review %s:\nSubject: %s\n%s", id, m.Subject, m.Body.Text)
	}
	for _, part := range []string{m.Subject, m.Body.Text, m.Body.HTML} {
		if strings.Contains(part, noticeCanary) || strings.Contains(part, "team@example.com") || strings.Contains(part, "elsewhere") {
			t.Errorf("the notice holds the payload:\n%s", part)
		}
	}
	item := noticeItem(t, db, s.store.Table(), id)
	if attrS(item, "status") != dynamo.NoticeSent || attrS(item, "message_id") == "" || attrN(item, "recipients") != "1" || attrN(item, "skipped") != "1" {
		t.Errorf("notice item %v: want SENT, a message id, 1 recipient and 1 skipped", item)
	}
	for n := range item {
		if v := attrS(item, n); strings.Contains(v, "@") {
			t.Errorf("notice item's %s holds an address: %s", n, v)
		}
	}
	// The same Task asking again: the same review, no second notice.
	if again := s.requestReview(t, task); again != id {
		t.Fatalf("the same Task got review %s, want %s", again, id)
	}
	if n := len(localtest.Mails(t, s.ses)); n != 1 {
		t.Errorf("%d messages after the Task asked again, want 1", n)
	}
	// The skipped address is logged by its position only.
	out := localtest.WaitStdout(t, s.request, 5*time.Second, func(out string) bool { return strings.Contains(out, "addresses skipped") })
	if strings.Contains(out, "elsewhere.example") || !strings.Contains(out, `"positions":[1]`) {
		t.Errorf("review-request's log names a skipped address, or not its position:\n%s", out)
	}
	// A Task without notify, or whose addresses the list admits none of,
	// sends nothing and claims nothing.
	none := s.requestReview(t, s.task(t, "tok-notice-2", func(m map[string]any) { m["notify"] = []string{"someone@elsewhere.example"} }))
	if n := len(localtest.Mails(t, s.ses)); n != 1 {
		t.Errorf("%d messages after a review whose notify the list refuses, want 1", n)
	}
	if item := noticeItem(t, db, s.store.Table(), none); item != nil {
		t.Errorf("a notice item for a review that noticed nobody: %v", item)
	}
}

// A notice whose SES request fails (an endpoint nothing listens on) still
// stores the review, which the Task's answer reports PENDING, and records
// the notice FAILED with an error code only.
func TestReviewRequestStoresTheReviewWhenItsNoticeFails(t *testing.T) {
	s, db := newNoticeStack(t, "http://127.0.0.1:9")
	id := s.requestReview(t, s.task(t, "tok-notice-fail", func(m map[string]any) { m["notify"] = []string{"ann@reviewers.example.com"} }))
	if _, err := s.reviews.Get(t.Context(), id); err != nil {
		t.Fatalf("the review is not stored: %v", err)
	}
	item := noticeItem(t, db, s.store.Table(), id)
	if attrS(item, "status") != dynamo.NoticeFailed || attrS(item, "error_code") != "unreachable" || attrS(item, "message_id") != "" {
		t.Errorf("notice item %v: want FAILED with error code unreachable", item)
	}
	if n := len(localtest.Mails(t, s.ses)); n != 0 {
		t.Errorf("%d messages reached the emulator", n)
	}
}
