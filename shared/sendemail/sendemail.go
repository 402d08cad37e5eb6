package sendemail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/toolgate/toolgate/shared/mailheader"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// MaxRecipients is the most recipients of one message, to, cc and bcc
// together: the SES quota (recipient.MaxPerMessage, checked by
// recipient.CheckCount, which the resolver applies to literal lists too).
const MaxRecipients = recipient.MaxPerMessage

// maxListed bounds how many failing addresses one error message lists.
const maxListed = 5

// API is the part of the SES v2 client the tool uses; *sesv2.Client
// implements it.
type API interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

// input is the catalog's send-email input.
type input struct {
	To      []string `json:"to"`
	Cc      []string `json:"cc"`
	Bcc     []string `json:"bcc"`
	ReplyTo []string `json:"reply_to"`
	Subject string   `json:"subject"`
	Text    *string  `json:"text"`
	HTML    *string  `json:"html"`
}

// output is the catalog's send-email output.
type output struct {
	MessageID string `json:"message_id"`
}

// Tool returns the send-email tool over ses. It returns {"message_id"} or
// a *tool.Error with the codes of the package documentation; nothing is
// sent unless every recipient passes cfg.Allow. The input is decoded
// strictly (unknown fields are TOOL_INPUT_INVALID), so the Func is safe to
// call without the dispatcher's schema check.
func Tool(cfg Config, ses API) toolcall.Func {
	return func(ctx context.Context, call *toolcall.Call) (json.RawMessage, error) {
		if cfg.From == "" || ses == nil {
			return nil, tool.Errorf(tool.Internal, "send-email is not configured")
		}
		in, err := decode(call.Input)
		if err != nil {
			return nil, err
		}
		req, err := cfg.request(in)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, tool.Wrap(tool.Timeout, err, "no time was left to call SES; nothing was sent")
		}
		out, err := ses.SendEmail(ctx, req, oneAttempt)
		if err != nil {
			te := classify(err)
			cfg.logFailure(ctx, err, te)
			return nil, te
		}
		id := aws.ToString(out.MessageId)
		if id == "" {
			return nil, tool.Errorf(tool.OutputInvalid, "SES accepted the message but returned no message id").Applied()
		}
		return json.Marshal(output{MessageID: id})
	}
}

// oneAttempt makes SendEmail, which is not idempotent, a single attempt:
// the SDK's own retries could send a message twice.
func oneAttempt(o *sesv2.Options) { o.RetryMaxAttempts = 1 }

// decode reads the input strictly.
func decode(raw json.RawMessage) (*input, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var in input
	if err := dec.Decode(&in); err != nil {
		return nil, tool.Wrap(tool.InputInvalid, err, "the input is not a send-email input object: %s", safeJSONError(err))
	}
	if dec.More() {
		return nil, tool.Errorf(tool.InputInvalid, "the input holds more than one JSON value")
	}
	return &in, nil
}

// safeJSONError keeps the parts of a decoding error that describe the input
// shape (field names, types), not its content.
func safeJSONError(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("%s must be %s", e.Field, e.Type)
	case *json.SyntaxError:
		return "invalid JSON"
	}
	if s := err.Error(); strings.HasPrefix(s, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(s, "json: unknown field ")
	}
	return "invalid JSON"
}

// request checks the input and builds the SendEmail request.
func (cfg Config) request(in *input) (*sesv2.SendEmailInput, error) {
	switch err := recipient.CheckCount(len(in.To) + len(in.Cc) + len(in.Bcc)); {
	case len(in.To) == 0:
		return nil, tool.Errorf(tool.InputInvalid, "to must name at least one recipient")
	case err != nil:
		return nil, tool.Wrap(tool.InputInvalid, err, "%v", err)
	case len(in.ReplyTo) > MaxRecipients:
		return nil, tool.Errorf(tool.InputInvalid, "%d reply_to addresses, over %d", len(in.ReplyTo), MaxRecipients)
	}
	if err := mailheader.CheckSubject(in.Subject); err != nil {
		return nil, tool.Wrap(tool.InputInvalid, err, "%v", err)
	}
	if in.Text == nil && in.HTML == nil {
		return nil, tool.Errorf(tool.InputInvalid, "give text, html or both")
	}
	var c checker
	to := c.check(cfg.Allow, "to", in.To)
	cc := c.check(cfg.Allow, "cc", in.Cc)
	bcc := c.check(cfg.Allow, "bcc", in.Bcc)
	replyTo := c.check(cfg.Allow, "reply_to", in.ReplyTo)
	if err := c.err(); err != nil {
		return nil, err
	}
	body := &types.Body{}
	if in.Text != nil {
		body.Text = utf8Content(*in.Text)
	}
	if in.HTML != nil {
		body.Html = utf8Content(*in.HTML)
	}
	req := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(cfg.From),
		Destination:      &types.Destination{ToAddresses: to, CcAddresses: cc, BccAddresses: bcc},
		ReplyToAddresses: replyTo,
		Content:          &types.EmailContent{Simple: &types.Message{Subject: utf8Content(in.Subject), Body: body}},
	}
	if cfg.IdentityARN != "" {
		req.FromEmailAddressIdentityArn = aws.String(cfg.IdentityARN)
	}
	return req, nil
}

func utf8Content(s string) *types.Content {
	return &types.Content{Data: aws.String(s), Charset: aws.String("UTF-8")}
}

// checker collects the allow-list decisions of every address.
type checker struct {
	invalid, refused []string
}

// check decides every address of one field and returns the addresses to
// send to (nil for an empty field), each in its canonical form
// (recipient.Address.Canonical), the only form the ses:Recipients condition
// of the function's role admits. Refusals name an address by its position
// ("to[1]"), never the address itself.
func (c *checker) check(l recipient.List, field string, addrs []string) []string {
	var out []string
	for i, s := range addrs {
		d := l.Decide(s)
		switch d.Verdict {
		case recipient.Allow:
			out = append(out, d.Address.Canonical())
		case recipient.Invalid:
			c.invalid = append(c.invalid, fmt.Sprintf("%s[%d] %s", field, i, d.Rule))
		default:
			c.refused = append(c.refused, fmt.Sprintf("%s[%d] %s", field, i, d.Rule))
		}
	}
	return out
}

// err returns TOOL_INPUT_INVALID when any address is invalid, else
// TOOL_PERMISSION_DENIED when any is refused, else nil.
func (c *checker) err() error {
	switch {
	case len(c.invalid) > 0:
		msg := list(c.invalid)
		if len(c.refused) > 0 {
			msg += fmt.Sprintf(" (and %d address(es) not on the allow-list)", len(c.refused))
		}
		return tool.Errorf(tool.InputInvalid, "nothing was sent: %s", msg)
	case len(c.refused) > 0:
		return tool.Errorf(tool.PermissionDenied, "nothing was sent: %s", list(c.refused))
	}
	return nil
}

func list(reasons []string) string {
	if len(reasons) <= maxListed {
		return strings.Join(reasons, "; ")
	}
	return strings.Join(reasons[:maxListed], "; ") + fmt.Sprintf("; and %d more", len(reasons)-maxListed)
}
