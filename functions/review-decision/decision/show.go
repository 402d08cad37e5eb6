package decision

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/webhook"
)

// sendEmailTool is the catalog's send-email tool (shared/catalog), the
// one tool whose show answer carries an EmailView.
const sendEmailTool = "send-email"

// EmailConfig is send-email's sender and recipient allow-list as
// review-decision is configured with them (functionconfig.EnvSender and
// EnvRecipientAllow, the values the send-email function reads): what a
// show answer's EmailView says of a send-email call (docs/reviews.md,
// "What a review's show answer carries"). The zero value knows neither.
type EmailConfig struct {
	// From is the sender in package recipient's form (the domain an
	// A-label); "" when not configured.
	From string
	// Allow is the recipient allow-list; nil when not configured, and
	// every valid recipient's verdict is then review.VerdictUnknown.
	Allow *recipient.List
}

// RunRowsReader reads a run's ledger rows with the read projection, never
// an input or a result (ledger.Store.RunRows: one Query of the run's
// partition, table.RunRowAttributes).
type RunRowsReader interface {
	RunRows(ctx context.Context, runID string) ([]ledger.Row, error)
}

// consoleRules are the rules behind the verdicts review-decision gives
// without the configuration that decides them.
const (
	ruleNoAllowList = "cannot be checked here: review-decision is not configured with send-email's recipient allow-list"
	ruleNoSender    = "review-decision is not configured with send-email's sender"
	ruleSender      = "is the sender send-email is configured with"
)

// showMembers fills the members of v, review r's show answer, that the
// review console shows (docs/reviews.md, "What a review's show answer
// carries"): the Solution its execution ARN names (webhook.RunOf; no
// SolutionVersion, which no record of the run names), the reviewed
// tool's pinned input schema, a send-email call's envelope with the
// allow-list's verdicts, and the metadata of the review's own run's
// ledger rows. An unregistered or refused toolset leaves InputSchema
// absent; a ledger that cannot be read is a REVIEW_UNAVAILABLE error.
func (s *Service) showMembers(ctx context.Context, r *review.Review, v *review.View) error {
	if solution, _, ok := webhook.RunOf(r.RunID); ok {
		v.Solution = solution
	}
	if r.Tool == sendEmailTool {
		v.Email = s.email.view(r.Input)
	}
	schema, err := s.pinnedSchema(ctx, r)
	if err != nil {
		return err
	}
	v.InputSchema = schema
	if v.RunCalls, err = s.runCalls(ctx, r); err != nil {
		return review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable")
	}
	return nil
}

// pinnedSchema is the input schema review r's toolset pins for its tool
// (Deps.Toolsets, through the toolset cache an approval's edits are
// checked with); nil for a review of no tool, without Deps.Toolsets, or
// when the toolset is not registered, is refused (logged as such by the
// cache) or does not pin the tool.
func (s *Service) pinnedSchema(ctx context.Context, r *review.Review) (json.RawMessage, error) {
	if s.toolsets == nil || r.Tool == "" || r.ToolsetID == "" {
		return nil, nil
	}
	ts, err := s.toolsetCache.Load(ctx, s.toolsets, r.ToolsetID, s.log)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.UpstreamUnavailable {
			return nil, review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable")
		}
		return nil, nil
	}
	pinned, ok := ts.Tools[r.Tool]
	if !ok || len(pinned.InputSchema) == 0 {
		return nil, nil
	}
	return pinned.InputSchema, nil
}

// runCalls are the rows of review r's own run, r.RunID, as metadata:
// seq, step, tool, status and start (RFC 3339 UTC). No other run is ever
// read: r.RunID is the only run id queried, and a row naming another run
// is dropped. Nil without Deps.Runs or for a review of no run.
func (s *Service) runCalls(ctx context.Context, r *review.Review) ([]review.RunCall, error) {
	if s.runs == nil || r.RunID == "" {
		return nil, nil
	}
	rows, err := s.runs.RunRows(ctx, r.RunID)
	if err != nil {
		return nil, err
	}
	out := make([]review.RunCall, 0, len(rows))
	for _, row := range rows {
		if row.RunID != r.RunID {
			continue
		}
		out = append(out, review.RunCall{Seq: string(row.Seq), Step: row.Step, Tool: row.Tool, Status: string(row.Status),
			At: row.StartedAt.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// view is the EmailView of a send-email input: From as configured, and
// each of to, cc and bcc in input order with recipient.List.Decide's
// verdict and rule. A member that is not a string is invalid; an input
// whose recipients are not arrays gives empty lists (the pinned schema
// refuses such an input before any review).
func (c EmailConfig) view(input json.RawMessage) *review.EmailView {
	var in struct {
		To, Cc, Bcc []json.RawMessage
	}
	_ = json.Unmarshal(input, &in) // members that are not arrays stay empty
	ev := &review.EmailView{From: review.AddressVerdict{Verdict: review.VerdictUnknown, Rule: ruleNoSender}}
	if c.From != "" {
		ev.From = review.AddressVerdict{Address: c.From, Verdict: string(recipient.Allow), Rule: ruleSender}
	}
	ev.To = c.verdicts(in.To)
	if ev.To == nil {
		ev.To = []review.AddressVerdict{}
	}
	ev.Cc, ev.Bcc = c.verdicts(in.Cc), c.verdicts(in.Bcc)
	return ev
}

// verdicts decides each of addrs.
func (c EmailConfig) verdicts(addrs []json.RawMessage) []review.AddressVerdict {
	if len(addrs) == 0 {
		return nil
	}
	out := make([]review.AddressVerdict, 0, len(addrs))
	for _, raw := range addrs {
		var a string
		if err := json.Unmarshal(raw, &a); err != nil {
			out = append(out, review.AddressVerdict{Address: string(raw), Verdict: string(recipient.Invalid), Rule: "is not a string"})
			continue
		}
		var l recipient.List
		if c.Allow != nil {
			l = *c.Allow
		}
		d := l.Decide(a)
		av := review.AddressVerdict{Address: a, Verdict: string(d.Verdict), Rule: d.Rule}
		if c.Allow == nil && d.Verdict == recipient.Refuse {
			av.Verdict, av.Rule = review.VerdictUnknown, ruleNoAllowList
		}
		out = append(out, av)
	}
	return out
}
