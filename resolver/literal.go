package resolver

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/mailheader"
	"github.com/toolgate/toolgate/shared/recipient"
)

// mailTool is the catalog name of the e-mail tool (docs/tools.md).
const mailTool = "send-email"

// recipientFields are send-email's address lists; the first three count
// towards recipient.MaxPerMessage.
var recipientFields = []string{"to", "cc", "bcc", "reply_to"}

// LiteralKind says which deployment list decides on a Literal.
type LiteralKind string

const (
	// LiteralFetchURL is a fetch step's URL: the platform's host
	// allow-list and address rules decide on it (package fetch, Precheck).
	LiteralFetchURL LiteralKind = "fetch-url"
	// LiteralHTTPURL is an http step's URL: the http function's platform
	// allow-list and the address rules decide on it, as on a fetch URL.
	LiteralHTTPURL LiteralKind = "http-url"
	// LiteralRecipient is a send-email recipient: the deployment's
	// recipient allow-list decides on it (package recipient, List.Decide).
	LiteralRecipient LiteralKind = "recipient"
	// LiteralReviewer is a review step's reviewer pattern: the accounts
	// the deployment admits decide on it (caller.EnvAccount and
	// caller.EnvReviewerAccounts; docs/reviews.md).
	LiteralReviewer LiteralKind = "reviewer"
)

// Literal is a value written in the Solution, not bound, that passed every
// rule check applies and that the deployment's configuration still decides
// on at run time. Check cannot know that configuration; the publish
// function checks each Literal against it (functions/publish/publish, Deployment),
// so that nothing is published whose literal values the tools would refuse.
type Literal struct {
	Kind LiteralKind
	Pos  Pos
	// Step is the tool or review step's id, Field the field as
	// diagnostics name it: "url", "to[0]", "reply_to[2]",
	// "review.reviewers[1]".
	Step, Field string
	// Value is the value as the tool receives it ("$${" read as "${").
	// For a URL whose path or query is bound it is the literal scheme and
	// authority only, such as "https://api.example.com".
	Value string
}

// literalText returns the text a string value gives the tool when it
// holds no binding ("$${" read as "${"); ok is false for anything else,
// including a malformed binding (reported as [binding]).
func literalText(v *value) (text string, ok bool) {
	if v.kind != kString {
		return "", false
	}
	segs, err := parseTemplate(v.str)
	if err != nil || len(segs) != 1 || segs[0].b != nil {
		return "", false
	}
	return segs[0].lit, true
}

// checkMail applies send-email's own rules to the literal values of every
// send-email step, with the functions the tool calls at run time, so that
// check refuses exactly the literals the tool would refuse as
// TOOL_INPUT_INVALID: each recipient must be one bare addr-spec
// (recipient.Parse; RFC 5322 §3.4.1, RFC 5321), the subject one line of
// text (mailheader.CheckSubject; RFC 5322 §2.2), and to, cc and bcc
// together at most recipient.MaxPerMessage. Whether the deployment allows a
// valid recipient is decided at publish (Literal). Bound values are the
// tool's to check at run time.
func (c *checker) checkMail() {
	for i, st := range c.sol.Steps {
		if c.tools[i] == nil || c.tools[i].Name != mailTool || st.With == nil || st.With.kind != kMap {
			continue
		}
		listed := 0 // recipients in literal lists of to, cc and bcc: a lower bound
		for _, name := range recipientFields {
			f := st.With.get(name)
			if f == nil || f.val.kind != kList {
				continue // absent, bound as a whole, or refused as [tool-input]
			}
			if name != "reply_to" {
				listed += len(f.val.items)
			}
			for j, it := range f.val.items {
				s, ok := literalText(it)
				if !ok {
					continue
				}
				field := fmt.Sprintf("%s[%d]", name, j)
				if _, err := recipient.Parse(s); err != nil {
					c.ds.errorf(it.pos, RuleRecipient, "step %q with.%s: %v; send-email refuses it (TOOL_INPUT_INVALID)", st.ID, field, err)
					continue
				}
				c.literal(i, Literal{Kind: LiteralRecipient, Pos: it.pos, Step: st.ID, Field: field, Value: s})
			}
		}
		if err := recipient.CheckCount(listed); err != nil {
			c.ds.errorf(st.With.pos, RuleRecipient, "step %q with: %v; send-email refuses the message (TOOL_INPUT_INVALID)", st.ID, err)
		}
		if f := st.With.get("subject"); f != nil && f.val.kind == kString {
			c.checkSubject(st, f.val)
		}
	}
}

// checkSubject applies mailheader.CheckSubject to a literal subject. A
// template's literal text is checked as written: every character the rule
// refuses reaches the subject whatever the bindings hold, and a binding or
// "$${" holds none, so the template is refused exactly when each of its
// values would be. An empty subject is left to [tool-input] (minLength).
func (c *checker) checkSubject(st *Step, v *value) {
	if _, err := parseTemplate(v.str); err != nil || v.str == "" {
		return
	}
	if s, ok := literalText(v); ok {
		if err := mailheader.CheckSubject(s); err != nil {
			c.ds.errorf(v.pos, RuleMailHeader, "step %q with.subject: %v; send-email refuses it (TOOL_INPUT_INVALID)", st.ID, err)
		}
		return
	}
	if err := mailheader.CheckSubject(v.str); err != nil {
		c.ds.errorf(v.pos, RuleMailHeader, "step %q with.subject, a template whose literal text alone decides this: %v; send-email refuses every value of it (TOOL_INPUT_INVALID)", st.ID, err)
	}
}

// checkURL applies structured-data-fetch's URL rules to a fetch step's
// url, with the functions the tool calls before every request: its syntax
// (fetchurl.Parse; RFC 3986 and the WHATWG URL Standard must read it the
// same) as [fetch-url], then its host and port against policy.fetch_hosts
// (fetchurl.Listed, package hostlist) as [fetch-host]. A URL without
// bindings is checked whole. In a URL with bindings, the literal text must
// hold no character a URL may never hold (fetchurl.CheckText), and the
// scheme and authority are checked when the literal text before the first
// binding holds them whole (a "/", "?" or "#" after "scheme://"); anything
// else is left to the run-time check of the bound value.
func (c *checker) checkURL(i int, st *Step, v *value) {
	raw, ok, textErr := literalURL(v)
	if textErr != nil {
		c.ds.errorf(v.pos, RuleFetchURL, "step %q with.url %q, a template whose literal text alone decides this: %v; structured-data-fetch refuses every value of it", st.ID, excerpt.BytesWithin(v.str, maxQuotedBytes, "..."), textErr)
		return
	}
	if ok {
		c.checkWholeURL(i, st, v, raw, v.str)
	}
}

// literalURL returns what check decides on in a url value (a string): the
// URL when it holds no binding ("$${" read as "${"), or the literal scheme
// and authority when the literal text before its first binding holds them
// whole (a "/", "?" or "#" after "scheme://"); ok is false when there is
// none, or the value is not a template (reported as [binding]). textErr
// is set when a template's literal text holds a character no URL may hold
// (fetchurl.CheckText): every value of it is refused.
func literalURL(v *value) (raw string, ok bool, textErr error) {
	segs, err := parseTemplate(v.str)
	if err != nil {
		return "", false, nil // reported as [binding]
	}
	if len(segs) == 1 && segs[0].b == nil {
		return segs[0].lit, true, nil
	}
	// Bindings and "$${" hold no character CheckText refuses, so the text
	// as written is refused exactly when some literal part is, and byte
	// offsets count in what the author wrote.
	if err := fetchurl.CheckText(v.str); err != nil {
		return "", false, err
	}
	if segs[0].b != nil {
		return "", false, nil
	}
	prefix := segs[0].lit
	k := strings.Index(prefix, "://")
	if k < 0 {
		return "", false, nil
	}
	end := strings.IndexAny(prefix[k+3:], "/?#")
	if end < 0 {
		return "", false, nil
	}
	return prefix[:k+3+end], true, nil
}

// checkWholeURL checks raw, a URL or a bound URL's literal scheme and
// authority, and records it for publish; shown is the url as diagnostics
// quote it.
func (c *checker) checkWholeURL(i int, st *Step, v *value, raw, shown string) {
	u, err := fetchurl.Parse(raw)
	if err != nil {
		c.ds.errorf(v.pos, RuleFetchURL, "step %q with.url %q: %v; structured-data-fetch refuses it", st.ID, excerpt.BytesWithin(shown, maxQuotedBytes, "..."), err)
		return
	}
	if len(c.hosts) == 0 {
		return // every entry was refused, and reported
	}
	name := "policy.fetch_hosts (" + strings.Join(c.hosts.Strings(), ", ") + ")"
	if err := fetchurl.Listed(c.hosts, name, u); err != nil {
		c.ds.errorf(v.pos, RuleFetchHost, "step %q with.url %q: %v", st.ID, excerpt.BytesWithin(shown, maxQuotedBytes, "..."), err)
		return
	}
	c.literal(i, Literal{Kind: LiteralFetchURL, Pos: v.pos, Step: st.ID, Field: "url", Value: raw})
}

// checkReviewers records every reviewer pattern of a review step for
// publish, where the deployment's accounts are known: a pattern naming an
// account the deployment does not admit admits nobody.
func (c *checker) checkReviewers() {
	for i, st := range c.sol.Steps {
		for j, p := range st.Reviewers {
			c.literal(i, Literal{Kind: LiteralReviewer, Pos: st.ReviewerPos[j], Step: st.ID, Field: fmt.Sprintf("review.reviewers[%d]", j), Value: p})
		}
	}
}

// literal records a literal of step i for publish, when the step is
// compiled into the definition (reachable).
func (c *checker) literal(i int, l Literal) {
	if c.reachable[i] {
		c.literals = append(c.literals, l)
	}
}
