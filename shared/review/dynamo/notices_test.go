package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
)

// A review's notice is claimed once: the second claim reports claimed
// false without an error; the outcome is recorded only while CLAIMED, so
// a second FinishNotice fails its condition and leaves the first; the
// item holds counts and SES's answer, and ends the ledger's retention
// after the review does.
func TestNoticeIsClaimedOnceAndFinishedOnce(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	claimed, err := l.store.ClaimNotice(ctx, "rv_notice", 2, 1, expires)
	if err != nil || !claimed {
		t.Fatalf("first claim: %v, %v; want claimed", claimed, err)
	}
	if claimed, err := l.store.ClaimNotice(ctx, "rv_notice", 2, 1, expires); err != nil || claimed {
		t.Fatalf("second claim: %v, %v; want not claimed and no error", claimed, err)
	}
	item := l.raw(t, table.Notice.Key("rv_notice"), table.Notice.SKValue)
	if stringAttr(item, "status") != dynamo.NoticeClaimed || numberAttr(item, "recipients") != "2" || numberAttr(item, "skipped") != "1" || stringAttr(item, "claimed_at") == "" {
		t.Fatalf("claimed item %v", item)
	}
	if want := expires.Add(tabledef.DefaultRetention).Unix(); numberAttr(item, table.ExpiresAt) != itoa(want) {
		t.Errorf("expires_at %s, want %d", numberAttr(item, table.ExpiresAt), want)
	}
	if err := l.store.FinishNotice(ctx, "rv_notice", "0100-abc", ""); err != nil {
		t.Fatal(err)
	}
	if err := l.store.FinishNotice(ctx, "rv_notice", "", "MessageRejected"); err == nil || !tabledef.IsConditionFailed(err) {
		t.Fatalf("a second outcome: %v, want its condition to fail", err)
	}
	item = l.raw(t, table.Notice.Key("rv_notice"), table.Notice.SKValue)
	if stringAttr(item, "status") != dynamo.NoticeSent || stringAttr(item, "message_id") != "0100-abc" || stringAttr(item, "sent_at") == "" || stringAttr(item, "error_code") != "" {
		t.Fatalf("sent item %v", item)
	}
	if _, err := l.store.ClaimNotice(ctx, "rv_failed", 1, 0, expires); err != nil {
		t.Fatal(err)
	}
	if err := l.store.FinishNotice(ctx, "rv_failed", "", "MessageRejected"); err != nil {
		t.Fatal(err)
	}
	item = l.raw(t, table.Notice.Key("rv_failed"), table.Notice.SKValue)
	if stringAttr(item, "status") != dynamo.NoticeFailed || stringAttr(item, "error_code") != "MessageRejected" || stringAttr(item, "message_id") != "" {
		t.Fatalf("failed item %v", item)
	}
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numberAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
