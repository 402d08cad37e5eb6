package sendemail

import (
	"log/slog"

	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/recipient"
)

// Environment variables read by ConfigFromEnv (functionconfig's, which
// the CDK app checks its configuration with).
const (
	EnvSender            = functionconfig.EnvSender
	EnvSenderIdentityARN = functionconfig.EnvSenderIdentityARN
	EnvRecipientAllow    = functionconfig.EnvRecipientAllow
)

// Config is the send-email tool's configuration, fixed at cold start.
type Config struct {
	// From is the sender address given to SES as FromEmailAddress; never
	// taken from the input.
	From string
	// IdentityARN, when not empty, is given to SES as
	// FromEmailAddressIdentityArn: the identity (the From address, its
	// domain or a parent domain) whose sending authorisation policy lets
	// this account send as From.
	IdentityARN string
	// Allow is the recipient allow-list; the zero List refuses everyone.
	Allow recipient.List
	// Log receives one line per failed SES call (code, HTTP status, request
	// id; never addresses or bodies). Nil means slog.Default().
	Log *slog.Logger
}

// ConfigFromEnv reads the send-email tool's configuration through getenv
// (os.Getenv in a Lambda) with functionconfig.SendEmailFromEnv, whose
// rules and errors are the function's.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c, err := functionconfig.SendEmailFromEnv(getenv)
	if err != nil {
		return Config{}, err
	}
	return Config{From: c.From, IdentityARN: c.IdentityARN, Allow: c.Allow}, nil
}
