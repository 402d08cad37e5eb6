package functionconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/recipient"
)

// Environment variables of review-request's review notices (docs/reviews.md,
// "Review notices"; the platform's toolgate:reviewNotices and
// toolgate:sender).
const (
	// EnvReviewNotices is the notices allow-list: a JSON list of entries of
	// package recipient ("ops@example.com", "@reviewers.example.com"),
	// the entry forms of EnvRecipientAllow. Unset or []: no notice is
	// ever sent.
	EnvReviewNotices = "TOOLGATE_REVIEW_NOTICES"
	// EnvNoticeSender is the notices' From address: the platform's sender
	// (EnvSender of send-email), one bare addr-spec SES has verified.
	// Required when EnvReviewNotices lists entries.
	EnvNoticeSender = "TOOLGATE_NOTICE_SENDER"
)

// ReviewNotices is review-request's configuration of review notices.
// The zero value sends none.
type ReviewNotices struct {
	// Allow is the notices allow-list; the zero List admits nobody.
	Allow recipient.List
	// Sender is the From address as send-email gives it to SES
	// (recipient.Address.String: the local part as written, the domain an
	// A-label), the form the ses:FromAddress IAM condition equals; "" when
	// Allow is empty.
	Sender string
	// IdentityARN, when not empty, is the SES identity that authorises
	// Sender (FromEmailAddressIdentityArn), as send-email's: the
	// platform's toolgate:senderIdentityArn, or the identity it creates.
	IdentityARN string
}

// On reports whether notices may be sent at all: an allow-list with an
// entry.
func (n ReviewNotices) On() bool { return n.Allow.Len() > 0 }

// ParseReviewNotices checks the notices allow-list entries (recipient.ParseList:
// all or nothing, the error naming the first bad entry by its index) and
// the sender (recipient.Parse), which is required when there is an entry
// and ignored otherwise. The platform's configuration check calls it
// with toolgate:reviewNotices and toolgate:sender, review-request with
// its environment (ReviewNoticesFromEnv).
func ParseReviewNotices(entries []string, sender string) (ReviewNotices, error) {
	if len(entries) == 0 {
		return ReviewNotices{}, nil
	}
	l, err := recipient.ParseList(entries)
	if err != nil {
		return ReviewNotices{}, fmt.Errorf("review notices: %v", err)
	}
	sender = strings.TrimSpace(sender)
	if sender == "" {
		return ReviewNotices{}, errors.New("review notices: no sender: the notices are sent from the platform's sender (" + EnvNoticeSender + ")")
	}
	a, err := recipient.Parse(sender)
	if err != nil {
		return ReviewNotices{}, fmt.Errorf("review notices: the sender: %v", err)
	}
	return ReviewNotices{Allow: l, Sender: a.String()}, nil
}

// ReviewNoticesFromEnv reads EnvReviewNotices (a JSON list of strings;
// unset, "" or [] sends no notice), EnvNoticeSender (ParseReviewNotices)
// and, optional, EnvSenderIdentityARN, the SES identity that authorises
// the sender, checked as send-email checks it (an SES identity ARN naming
// the sender, its domain or a parent domain) through getenv.
func ReviewNoticesFromEnv(getenv func(string) string) (ReviewNotices, error) {
	v := strings.TrimSpace(getenv(EnvReviewNotices))
	if v == "" {
		return ReviewNotices{}, nil
	}
	var entries []string
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		return ReviewNotices{}, fmt.Errorf("%s is not a JSON list of addresses and @domain entries: %v", EnvReviewNotices, err)
	}
	n, err := ParseReviewNotices(entries, getenv(EnvNoticeSender))
	if err != nil {
		return ReviewNotices{}, fmt.Errorf("%s: %w", EnvReviewNotices, err)
	}
	if arn := strings.TrimSpace(getenv(EnvSenderIdentityARN)); arn != "" && n.On() {
		from, _ := recipient.Parse(n.Sender) // ParseReviewNotices parsed it
		if err := checkIdentityARN(arn, from); err != nil {
			return ReviewNotices{}, fmt.Errorf("%s %q: %v", EnvSenderIdentityARN, arn, err)
		}
		n.IdentityARN = arn
	}
	return n, nil
}
