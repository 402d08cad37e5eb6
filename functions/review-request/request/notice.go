package request

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/review"
)

// SES is the part of the SES v2 client review notices use; *sesv2.Client
// implements it.
type SES interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

// NoticeTimeout bounds a notice's SendEmail: a notice that SES does not
// accept within it is recorded FAILED ("timeout") and the review Task
// returns as it would without one, well inside review-request's own
// timeout (15 s, infra/platform).
const NoticeTimeout = 4 * time.Second

// taskNotify is the notify member of a review Task's payload
// (tool.ReviewTask.Notify), which review.DecodeTask checks but does not
// keep on the review: the addresses are the notice's only, never stored.
type taskNotify struct {
	Notify []string `json:"notify"`
}

// notifyOf returns the notify addresses of a review Task's payload, which
// review.DecodeTask has already accepted; none when it has none.
func notifyOf(payload json.RawMessage) []string {
	var t taskNotify
	if err := json.Unmarshal(payload, &t); err != nil {
		return nil
	}
	return t.Notify
}

// notice sends r's review notice when r was just stored and its Task
// asked for one (notify; docs/reviews.md, "Review notices"): to the
// addresses the notices allow-list admits (review.NoticeRecipients; the
// others are logged by position, never by address), from the platform's
// sender, once per review (dynamo Store.ClaimNotice before the one
// SendEmail, FinishNotice after it). Nothing it meets fails the review or
// its Task: every failure is logged and, once claimed, recorded FAILED
// with SES's error code only.
func (h *Handler) notice(ctx context.Context, r *review.Review, notify []string) {
	if len(notify) == 0 {
		return
	}
	if !h.notices.On() || h.ses == nil {
		h.log.InfoContext(ctx, "review notice not sent: this deployment has no notices allow-list (toolgate:reviewNotices)", "review_id", r.ID,
			"addresses", len(notify))
		return
	}
	kept, skipped := review.NoticeRecipients(h.notices.Allow, notify)
	if len(skipped) > 0 {
		h.log.WarnContext(ctx, "review notice: addresses skipped: not on the notices allow-list, or no addr-spec", "review_id", r.ID,
			"positions", skipped)
	}
	if len(kept) == 0 {
		return
	}
	claimed, err := h.store.ClaimNotice(ctx, r.ID, len(kept), len(skipped), r.ExpiresAt)
	if err != nil {
		h.log.WarnContext(ctx, "review notice not sent: its claim failed", "review_id", r.ID, "error", err.Error())
		return
	}
	if !claimed {
		h.log.InfoContext(ctx, "review notice not sent: claimed before", "review_id", r.ID)
		return
	}
	n := review.NoticeOf(r, h.stage)
	sctx, cancel := context.WithTimeout(ctx, NoticeTimeout)
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(h.notices.Sender),
		Destination:      &types.Destination{ToAddresses: kept},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(n.Subject()), Charset: aws.String("UTF-8")},
			Body:    &types.Body{Text: &types.Content{Data: aws.String(n.Text()), Charset: aws.String("UTF-8")}},
		}},
	}
	if h.notices.IdentityARN != "" {
		// Sending authorisation, as send-email sends (docs/reviews.md,
		// "Review notices").
		in.FromEmailAddressIdentityArn = aws.String(h.notices.IdentityARN)
	}
	out, err := h.ses.SendEmail(sctx, in, oneAttempt)
	timedOut := sctx.Err() != nil
	cancel()
	id, code := "", ""
	switch {
	case err != nil:
		code = sesErrorCode(err, timedOut)
	case aws.ToString(out.MessageId) == "":
		code = "NoMessageId"
	default:
		id = aws.ToString(out.MessageId)
	}
	if ferr := h.store.FinishNotice(ctx, r.ID, id, code); ferr != nil {
		h.log.WarnContext(ctx, "review notice: its outcome was not recorded", "review_id", r.ID, "error", ferr.Error())
	}
	if code != "" {
		h.log.WarnContext(ctx, "review notice failed", "review_id", r.ID, "error_code", code, "recipients", len(kept))
		return
	}
	h.log.InfoContext(ctx, "review notice sent", "review_id", r.ID, "message_id", id, "recipients", len(kept), "skipped", len(skipped))
}

// oneAttempt makes SendEmail, which is not idempotent, one attempt: the
// SDK's retries could send a notice twice.
func oneAttempt(o *sesv2.Options) { o.RetryMaxAttempts = 1 }

// sesErrorCode is what a failed notice records: SES's error code (the
// x-amzn-ErrorType of its answer), "timeout" when NoticeTimeout passed,
// "unreachable" when no connection to SES was made, else "error". Never
// SES's message, which may quote an address.
func sesErrorCode(err error, timedOut bool) string {
	var ae smithy.APIError
	var ne *net.OpError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() != "":
		return ae.ErrorCode()
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne):
		return "unreachable"
	}
	return "error"
}
