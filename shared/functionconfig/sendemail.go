package functionconfig

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/shared/recipient"
)

// Environment variables read by SendEmailFromEnv (send-email; the publish function reads
// EnvRecipientAllow too).
const (
	// EnvSender is the From address: one bare addr-spec that SES has
	// verified (or that IdentityARN authorises). Required.
	EnvSender = "TOOLGATE_SENDER"
	// EnvSenderIdentityARN is the ARN of the SES identity that authorises
	// the sender (sending authorisation, FromEmailAddressIdentityArn).
	// Optional.
	EnvSenderIdentityARN = "TOOLGATE_SENDER_IDENTITY_ARN"
	// EnvRecipientAllow is the recipient allow-list: comma-separated entries
	// of package recipient ("alice@example.com", "@example.com"), spaces
	// around entries ignored. Required and not empty.
	EnvRecipientAllow = "TOOLGATE_RECIPIENT_ALLOW"
)

// SendEmail is the send-email tool's configuration as SendEmailFromEnv
// reads it (shared/sendemail.Config adds the logger).
type SendEmail struct {
	// From is the sender address given to SES as FromEmailAddress, in
	// package recipient's canonical form (the domain an A-label).
	From string
	// IdentityARN, when not empty, is the SES identity that authorises
	// From (FromEmailAddressIdentityArn).
	IdentityARN string
	// Allow is the recipient allow-list; the zero List refuses everyone.
	Allow recipient.List
}

// identityARN is the shape of an SES identity ARN:
// arn:<partition>:ses:<region>:<12-digit account>:identity/<address or domain>.
var identityARN = regexp.MustCompile(`^arn:aws(-[a-z]+)*:ses:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:identity/(.+)$`)

// SendEmailFromEnv reads EnvSender, EnvSenderIdentityARN and EnvRecipientAllow
// through getenv (os.Getenv in a Lambda). The sender must be one bare
// addr-spec under package recipient's rules (it is stored in that form, the
// domain as an A-label); the identity ARN, when set, must be an SES identity
// ARN naming the sender, its domain or a parent domain; the allow-list must
// hold at least one entry and every entry must parse. All problems come back
// in one error, prefixed "send-email config: ", for one clear log line.
func SendEmailFromEnv(getenv func(string) string) (SendEmail, error) {
	var cfg SendEmail
	var problems []string
	sender := strings.TrimSpace(getenv(EnvSender))
	var from recipient.Address
	if sender == "" {
		problems = append(problems, EnvSender+" is not set: give the From address SES has verified")
	} else if a, err := recipient.Parse(sender); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", EnvSender, err))
	} else {
		from, cfg.From = a, a.String()
	}
	if arn := strings.TrimSpace(getenv(EnvSenderIdentityARN)); arn != "" {
		if err := checkIdentityARN(arn, from); err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: %v", EnvSenderIdentityARN, arn, err))
		} else {
			cfg.IdentityARN = arn
		}
	}
	if l, err := parseAllow(getenv(EnvRecipientAllow)); err != nil {
		problems = append(problems, err.Error())
	} else {
		cfg.Allow = l
	}
	if len(problems) > 0 {
		return SendEmail{}, errors.New("send-email config: " + strings.Join(problems, "; "))
	}
	return cfg, nil
}

// checkIdentityARN checks an SES identity ARN and that its identity covers
// from (when from is known): the address itself, its domain or a parent
// domain, as SES sending authorisation requires.
func checkIdentityARN(arn string, from recipient.Address) error {
	m := identityARN.FindStringSubmatch(arn)
	if m == nil {
		return errors.New("not an SES identity ARN (arn:aws:ses:<region>:<account>:identity/<address or domain>)")
	}
	if from == (recipient.Address{}) {
		return nil
	}
	name := m[len(m)-1]
	if a, err := recipient.Parse(name); err == nil {
		if !a.Equal(from) {
			return fmt.Errorf("the identity %s is not the sender %s", name, from)
		}
		return nil
	}
	d, err := recipient.Parse("x@" + name)
	if err != nil {
		return fmt.Errorf("the identity %q is neither an address nor a domain", name)
	}
	if from.Domain != d.Domain && !strings.HasSuffix(from.Domain, "."+d.Domain) {
		return fmt.Errorf("the identity %s covers neither the sender %s nor its domain", name, from)
	}
	return nil
}

// parseAllow parses EnvRecipientAllow (recipient.ParseCommaList, which
// the publish function reads the same variable with).
func parseAllow(v string) (recipient.List, error) {
	if strings.TrimSpace(v) == "" {
		return recipient.List{}, errors.New(EnvRecipientAllow + " is empty: list the recipients send-email may write to, comma-separated addresses or @domain entries (nothing could be sent otherwise)")
	}
	l, err := recipient.ParseCommaList(v)
	if err != nil {
		return recipient.List{}, fmt.Errorf("%s: %v", EnvRecipientAllow, err)
	}
	return l, nil
}
