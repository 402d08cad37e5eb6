package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/table"
)

// The statuses of a notice item (table.Notice; docs/reviews.md, "Review
// notices").
const (
	// NoticeClaimed: claimed, SES not yet answered (or the function ended
	// before it recorded the answer; the notice is not sent again).
	NoticeClaimed = "CLAIMED"
	// NoticeSent: SES accepted the message (message_id).
	NoticeSent = "SENT"
	// NoticeFailed: SES refused the message or did not answer in time
	// (error_code).
	NoticeFailed = "FAILED"
)

// noticeTime is a notice item's times: RFC 3339 UTC with milliseconds.
const noticeTime = "2006-01-02T15:04:05.000Z"

// noticeItem is a notice item as claimed (table.Notice; access
// ClaimNotices).
type noticeItem struct {
	PK         string `dynamodbav:"pk"` // NOTICE#<review id>
	SK         string `dynamodbav:"sk"` // "NOTICE"
	Status     string `dynamodbav:"status"`
	Recipients int    `dynamodbav:"recipients"`
	Skipped    int    `dynamodbav:"skipped"`
	ClaimedAt  string `dynamodbav:"claimed_at"`
	ExpiresAt  int64  `dynamodbav:"expires_at"`
}

// ClaimNotice claims the notice of review id, once: one PutItem
// conditional on attribute_not_exists(pk) (access ClaimNotices) of status
// NoticeClaimed with the counts of recipients the message goes to and of
// notify addresses skipped. It reports claimed false, with no error, when
// the review's notice was claimed before (the message was sent, or is
// being sent, by that claim). The item ends at expires, the review's own
// end, plus the ledger's retention, as a decided review does.
func (s *Store) ClaimNotice(ctx context.Context, id string, recipients, skipped int, expires time.Time) (claimed bool, err error) {
	item, err := attributevalue.MarshalMap(noticeItem{PK: table.Notice.Key(id), SK: table.Notice.SKValue, Status: NoticeClaimed,
		Recipients: recipients, Skipped: skipped, ClaimedAt: s.now().UTC().Format(noticeTime), ExpiresAt: expires.Add(s.retention).Unix()})
	if err != nil {
		return false, fmt.Errorf("notice item of review %s: %w", id, err)
	}
	err = s.put(ctx, item, notExists(), "")
	if tabledef.IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("put the notice item of review %s: %w", id, err)
	}
	return true, nil
}

// FinishNotice records what SES answered to review id's claimed notice
// (one UpdateItem conditional on status = NoticeClaimed; access
// FinishNotices): NoticeSent with SES's messageID when errorCode is "",
// else NoticeFailed with errorCode (an SES error code, never its message).
func (s *Store) FinishNotice(ctx context.Context, id, messageID, errorCode string) error {
	now := s.now().UTC().Format(noticeTime)
	u := expression.Set(attr(table.Notice, "status"), expression.Value(NoticeSent)).
		Set(attr(table.Notice, "message_id"), expression.Value(messageID)).
		Set(attr(table.Notice, "sent_at"), expression.Value(now))
	if errorCode != "" {
		u = expression.Set(attr(table.Notice, "status"), expression.Value(NoticeFailed)).
			Set(attr(table.Notice, "error_code"), expression.Value(errorCode))
	}
	cond := attr(table.Notice, "status").Equal(expression.Value(NoticeClaimed))
	if err := s.update(ctx, keyOf(table.Notice, id), u, cond); err != nil {
		return fmt.Errorf("update the notice item of review %s: %w", id, err)
	}
	return nil
}
