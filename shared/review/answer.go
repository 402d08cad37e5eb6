package review

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
)

// maxAnswerProblems bounds the schema problems a refused answer or edit
// lists.
const maxAnswerProblems = 5

// MaxInputAndEditsBytes bounds a review's input and an approval's edits
// together (RFC 8785 bytes), which its item records side by side:
// DynamoDB's item size quota (400 KB, 409 600 bytes) less the answer's
// bound (tool.MaxAnswerBytes) and 64 KiB for the item's other attributes
// (the question, the reason, the task token, the reviewers, the names and
// times). Edits past it would fail the decision's write.
const MaxInputAndEditsBytes = 409600 - tool.MaxAnswerBytes - 64<<10

// checkQuestion checks what a review Task adds to the call it asks about
// (docs/reviews.md): ask, a JSON object of at most tool.MaxAskSchemaBytes
// as compact JSON that compiles as JSON Schema 2020-12 (shared/schema,
// the library the pinned input schemas use); editable, call reviews only,
// at most tool.MaxEditable distinct non-empty names, none of the members
// that decide where toolName's effect lands (catalog.EffectTargets, which
// the resolver refuses too: a definition written by hand gets no further
// than the review Task); notify, at most
// tool.MaxNotify RFC 5322 addr-specs (shared/recipient Parse). It returns
// ask's compact form (nil when absent). An error names the member and the
// rule, never an address.
func checkQuestion(kind tool.ReviewKind, toolName string, ask json.RawMessage, editable, notify []string) (json.RawMessage, error) {
	var compact json.RawMessage
	if t := bytes.TrimSpace(ask); len(t) > 0 {
		if t[0] != '{' {
			return nil, fmt.Errorf("ask must be a JSON object (a JSON Schema)")
		}
		var b bytes.Buffer
		if err := json.Compact(&b, t); err != nil {
			return nil, fmt.Errorf("ask is not JSON")
		}
		if b.Len() > tool.MaxAskSchemaBytes {
			return nil, fmt.Errorf("ask is %d bytes as compact JSON, over %d", b.Len(), tool.MaxAskSchemaBytes)
		}
		if _, err := schema.CompileUncached(b.Bytes()); err != nil {
			return nil, fmt.Errorf("ask does not compile as JSON Schema 2020-12: %s", excerpt.Bytes(err.Error(), 300, "..."))
		}
		compact = b.Bytes()
	}
	if len(editable) > 0 && kind == tool.ReviewShow {
		return nil, fmt.Errorf("editable is for reviews of a call: a review of kind %q edits nothing", tool.ReviewShow)
	}
	if len(editable) > tool.MaxEditable {
		return nil, fmt.Errorf("editable names %d members, over %d", len(editable), tool.MaxEditable)
	}
	for i, name := range editable {
		switch {
		case name == "" || !utf8.ValidString(name) || len(name) > 256:
			return nil, fmt.Errorf("editable[%d] must be 1 to 256 bytes of UTF-8", i)
		case strings.ContainsFunc(name, func(r rune) bool { return r == '\t' || r == '\n' || invisible.Is(r) }):
			// A name is printed to reviewers (toolgate review show):
			// none may forge or hide a line there.
			return nil, fmt.Errorf("editable[%d] holds a control or invisible character", i)
		case slices.Contains(editable[:i], name):
			return nil, fmt.Errorf("editable[%d] names %q twice", i, excerpt.Bytes(name, 64, "..."))
		case slices.Contains(catalog.EffectTargets(toolName), name):
			return nil, fmt.Errorf("editable[%d] names %s's %q, which decides where the call's effect lands: a reviewer may never edit it (catalog.EffectTargets)", i, toolName, name)
		}
	}
	if len(notify) > tool.MaxNotify {
		return nil, fmt.Errorf("notify lists %d addresses, over %d (Amazon SES recipients per message)", len(notify), tool.MaxNotify)
	}
	for i, addr := range notify {
		if _, err := recipient.Parse(addr); err != nil {
			return nil, fmt.Errorf("notify[%d] is not an addr-spec (RFC 5322)", i)
		}
	}
	return compact, nil
}

// canonicalProblem says why tool.InputDigest refused an answer or edits
// (RFC 8785 canonicalization) without quoting any of their text: the
// canonicalizer's own message names a duplicate member by its name, which
// is the reviewer's, as a value is.
func canonicalProblem(err error) string {
	if msg := tool.Classify(err).Message; strings.Contains(msg, "number ending at byte") {
		return strings.Replace(msg, "the input number", "the number", 1)
	}
	return "not JSON that RFC 8785 canonicalizes: a name twice in one object, text that is not UTF-8, or an unpaired surrogate"
}

// cloneOrNil copies s; nil when s is empty.
func cloneOrNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// absent reports whether a decision's answer or edits is absent: no
// bytes, or JSON null.
func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// CheckAnswer checks the answer given with verdict v on review r
// (docs/reviews.md, "The question") and returns its RFC 8785 form (nil
// for none), which the review records and its decision JSON carries. Refused, with an error whose text names the rule, the schema
// keyword and the answer's JSON Pointer but never a value: an answer to a
// review that asks nothing, an answer given with a rejection, an approval
// of a review with Ask but no answer, an answer that is not JSON or is
// over tool.MaxAnswerBytes as compact JSON or in its RFC 8785 form (the
// decision JSON carries it into the execution's state), and one that
// fails r.Ask.
func CheckAnswer(r *Review, v Verdict, answer json.RawMessage) (json.RawMessage, error) {
	switch {
	case absent(answer) && v == Approve && len(r.Ask) > 0:
		return nil, fmt.Errorf("review %s asks a question: an approval must carry an answer (toolgate review approve --answer)", r.ID)
	case absent(answer):
		return nil, nil
	case len(r.Ask) == 0:
		return nil, fmt.Errorf("review %s asks no question: give no answer", r.ID)
	case v != Approve:
		return nil, fmt.Errorf("answers are given with approvals only: a rejection carries none")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, answer); err != nil {
		return nil, fmt.Errorf("the answer is not JSON")
	}
	if b.Len() > tool.MaxAnswerBytes {
		return nil, fmt.Errorf("the answer is %d bytes as compact JSON, over %d", b.Len(), tool.MaxAnswerBytes)
	}
	canonical, _, err := tool.InputDigest(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the answer: %s", canonicalProblem(err))
	}
	if len(canonical) > tool.MaxAnswerBytes {
		// Recorded in its RFC 8785 form, which writes 1e20 in 21 characters.
		return nil, fmt.Errorf("the answer is %d bytes in its RFC 8785 form, over %d", len(canonical), tool.MaxAnswerBytes)
	}
	// Uncached: every review may ask its own question, and a decision is
	// rare, so keeping each compiled schema for the container's life
	// would only grow its memory.
	s, err := schema.CompileUncached(r.Ask)
	if err != nil {
		return nil, fmt.Errorf("review %s's question does not compile", r.ID)
	}
	var val any
	if err := json.Unmarshal(b.Bytes(), &val); err != nil {
		return nil, fmt.Errorf("the answer is not JSON")
	}
	if err := s.Validate(val); err != nil {
		return nil, fmt.Errorf("the answer does not match the review's question: %s",
			strings.Join(schema.RedactedLines(schema.Problems(err, nil), "answer", maxAnswerProblems), "; "))
	}
	// The RFC 8785 form: a number in at most 25 characters however it was
	// written, each member once. The resolver bounds the answer in the
	// run's state by the question's schema (numbers at
	// inputrecord.NumberBytes, each property once), which the text as
	// sent need not keep ("1.000…0", a member repeated).
	return canonical, nil
}

// CheckEdits checks the edits given with verdict v on review r
// (docs/reviews.md, "Approve with edits") and returns their RFC 8785 form
// and the input with them merged (MergeEdits) and its digest; all empty
// for none. Refused, naming the member but never a value: edits with a
// rejection, edits of a review that shows values or names no editable
// members, edits that are not a JSON object, a member r.Editable does not
// name, edits that with the input pass MaxInputAndEditsBytes, and a merged
// input over MaxInputBytes. The merged input's check
// against the reviewed tool's pinned input schema is the caller's
// (review-decision reads the toolset).
func CheckEdits(r *Review, v Verdict, edits json.RawMessage) (canonical, merged json.RawMessage, digest string, err error) {
	if absent(edits) {
		return nil, nil, "", nil
	}
	switch {
	case v != Approve:
		return nil, nil, "", fmt.Errorf("edits are given with approvals only")
	case r.Shows():
		return nil, nil, "", fmt.Errorf("review %s shows values: there is no call input to edit", r.ID)
	case len(r.Editable) == 0:
		return nil, nil, "", fmt.Errorf("review %s has no editable members", r.ID)
	}
	var members map[string]json.RawMessage
	if t := bytes.TrimSpace(edits); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &members) != nil {
		return nil, nil, "", fmt.Errorf("edits must be a JSON object of the members replaced")
	}
	if len(members) == 0 {
		return nil, nil, "", nil
	}
	for name := range members {
		if !slices.Contains(r.Editable, name) {
			return nil, nil, "", fmt.Errorf("edits: member %q is not editable in review %s (editable: %s)",
				excerpt.Bytes(name, 64, "..."), r.ID, strings.Join(r.Editable, ", "))
		}
	}
	if canonical, _, err = tool.InputDigest(edits); err != nil {
		return nil, nil, "", fmt.Errorf("edits: %s", canonicalProblem(err))
	}
	if n := len(r.Input) + len(canonical); n > MaxInputAndEditsBytes {
		return nil, nil, "", fmt.Errorf("the edits are %d bytes and the review's input %d: together over the %d bytes a review item records of both (DynamoDB's 400 KB item size); edit fewer or shorter members",
			len(canonical), len(r.Input), MaxInputAndEditsBytes)
	}
	if merged, digest, err = MergeEdits(r.Input, canonical); err != nil {
		return nil, nil, "", err
	}
	if len(merged) > MaxInputBytes {
		return nil, nil, "", fmt.Errorf("the input with the edits merged is %d bytes, over %d", len(merged), MaxInputBytes)
	}
	return canonical, merged, digest, nil
}

// MergeEdits is input (a JSON object) with each top-level member of edits
// (a JSON object) replaced by, or set to, the edit's value: a shallow
// merge, not RFC 7396 (a null edit sets null). It returns the merged
// input's RFC 8785 form and digest (tool.InputDigest), the form the
// approval authorises (Review.ApprovedDigest).
func MergeEdits(input, edits json.RawMessage) (json.RawMessage, string, error) {
	var in, ed map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil || in == nil {
		return nil, "", fmt.Errorf("merge edits: the input is not a JSON object")
	}
	if err := json.Unmarshal(edits, &ed); err != nil || ed == nil {
		return nil, "", fmt.Errorf("merge edits: edits are not a JSON object")
	}
	for k, v := range ed {
		in[k] = v
	}
	out, err := json.Marshal(in)
	if err != nil {
		return nil, "", fmt.Errorf("merge edits: %w", err)
	}
	canonical, digest, err := tool.InputDigest(out)
	if err != nil {
		return nil, "", fmt.Errorf("merge edits: %w", err)
	}
	return canonical, digest, nil
}

// EditedMembers are the member names of edits (a JSON object), sorted;
// nil for none.
func EditedMembers(edits json.RawMessage) []string {
	var ed map[string]json.RawMessage
	if json.Unmarshal(edits, &ed) != nil || len(ed) == 0 {
		return nil
	}
	out := make([]string, 0, len(ed))
	for k := range ed {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DecideDetail is the Detail a decision's caller proof binds
// (DecideBinding): "" when the decision carries neither an answer nor
// edits (so a CLI that sends neither binds as before), else "sha256:" and
// the hex SHA-256 of the RFC 8785 form of {"answer": A, "edits": E}, an
// absent member null. An error for an answer or edits that is not JSON.
func DecideDetail(answer, edits json.RawMessage) (string, error) {
	if absent(answer) && absent(edits) {
		return "", nil
	}
	a, e := json.RawMessage("null"), json.RawMessage("null")
	if !absent(answer) {
		a = answer
	}
	if !absent(edits) {
		e = edits
	}
	doc, err := json.Marshal(map[string]json.RawMessage{"answer": a, "edits": e})
	if err != nil {
		return "", fmt.Errorf("the answer and the edits must be JSON")
	}
	_, digest, err := tool.InputDigest(doc)
	if err != nil {
		return "", fmt.Errorf("the answer and the edits must be JSON: %v", err)
	}
	return digest, nil
}

// DecideBinding is what a decision's caller proof is bound to
// (docs/identity.md, "The caller proof"): caller.ActionDecide, the review
// id, the verdict, the digest of the input the reviewer was shown and
// DecideDetail of the answer and the edits, so that a proof signed for
// one answer or one set of edits records no other.
func DecideBinding(id string, v Verdict, shownDigest string, answer, edits json.RawMessage) (caller.Binding, error) {
	detail, err := DecideDetail(answer, edits)
	if err != nil {
		return caller.Binding{}, err
	}
	return caller.Binding{Action: caller.ActionDecide, Target: id, Decision: string(v), InputDigest: shownDigest, Detail: detail}, nil
}
