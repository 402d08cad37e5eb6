package resolver

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
)

// The kinds of review and what a review asks, as the grammar writes them
// (docs/solutions.md §2.4, review; docs/reviews.md, "Kinds of
// review"): review.of reviews one tool step's call, review.show shows
// values and approves no call; review.ask asks the reviewer for an
// answer, review.editable lets the reviewer replace some of the reviewed
// call's input members, review.notify names who is told by e-mail.

// reviewKind reports a review with both or neither of of and show.
func (d *decoder) reviewKind(st *Step, v *value, what string) {
	of, show := v.get("of"), v.get("show")
	switch {
	case of == nil && show == nil:
		d.ds.errorf(v.pos, RuleMissingField, "%s review has neither \"of\" (the tool step whose call it approves) nor \"show\" (the values it shows): write one", what)
	case of != nil && show != nil:
		d.ds.errorf(show.keyPos, RuleInvalidValue, "%s review has both \"of\" and \"show\": a review either approves one tool step's call (of) or shows values and approves none (show)", what)
		st.OfUnusable = true
	}
}

// decodeShow decodes review.show: a mapping of the values shown, with
// bindings as in a pass step.
func (d *decoder) decodeShow(st *Step, f *field, what string) {
	switch {
	case f.val.kind != kMap:
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.show must be a non-empty mapping of the values the reviewer sees (bindings as in a pass step), not a %s", what, f.val.kind)
		return
	case len(f.val.fields) == 0:
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.show is empty: name the values the reviewer sees (bindings as in a pass step)", what)
		return
	}
	st.Show = f.val
}

// decodeAsk decodes review.ask: a JSON object that compiles as JSON
// Schema 2020-12, at most tool.MaxAskSchemaBytes of compact JSON, with no
// key ending ".$" (the schema is written into the review Task's
// Parameters, where such a key is a path: AWS Step Functions Developer
// Guide, "Parameters"), that bounds its answer to tool.MaxAnswerBytes
// (askBound); refused otherwise.
func (d *decoder) decodeAsk(st *Step, f *field, what string) {
	if f.val.kind != kMap {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.ask must be a JSON Schema (an object) of the reviewer's answer, such as {type: string, maxLength: 2000}, not a %s", what, f.val.kind)
		return
	}
	if at, key := pathKey(f.val); at != nil {
		d.ds.errorf(at.keyPos, RuleInvalidValue, "%s review.ask holds the key %q: a key ending in \".$\" would be read as a path in the review Task's Parameters", what, excerpt.BytesWithin(key, maxQuotedBytes, "..."))
		return
	}
	plain := f.val.plain()
	compact, err := json.Marshal(plain)
	if err != nil {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.ask: %v", what, err)
		return
	}
	if len(compact) > tool.MaxAskSchemaBytes {
		d.ds.errorf(f.val.pos, RuleQuota, "%s review.ask is %d bytes of compact JSON, over %d: a question's schema travels in the review Task and the review item", what, len(compact), tool.MaxAskSchemaBytes)
		return
	}
	if _, err := schema.CompileValue(plain); err != nil {
		for _, p := range schema.Problems(err, nil) {
			d.ds.errorf(locate(f.val, p.Location), RuleInvalidValue, "%s review.ask is not a valid JSON Schema (2020-12): ask%s: %s", what, strings.ReplaceAll(p.Location, "/", "."), p.Message)
		}
		return
	}
	var doc any
	if err := json.Unmarshal(compact, &doc); err != nil {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.ask: %v", what, err)
		return
	}
	n, at, why := askBound(doc, "")
	switch {
	case why != "":
		d.ds.errorf(locate(f.val, at), RuleStateSize, "%s review.ask%s leaves the answer unbounded: %s; the answer lands in the run's state data, so the schema must bound it (strings with maxLength, enum or const; arrays with maxItems and bounded items; objects with additionalProperties: false and bounded properties)", what, strings.ReplaceAll(at, "/", "."), why)
		return
	case n > tool.MaxAnswerBytes:
		d.ds.errorf(f.val.pos, RuleStateSize, "%s review.ask admits an answer of up to %d bytes of JSON, over %d: bound it tighter", what, n, tool.MaxAnswerBytes)
		return
	}
	st.Ask = f.val
}

// pathKey finds a mapping key ending in ".$" anywhere in v.
func pathKey(v *value) (*field, string) {
	switch v.kind {
	case kMap:
		for k := range v.fields {
			f := &v.fields[k]
			if strings.HasSuffix(f.key, ".$") {
				return f, f.key
			}
			if at, key := pathKey(f.val); at != nil {
				return at, key
			}
		}
	case kList:
		for _, it := range v.items {
			if at, key := pathKey(it); at != nil {
				return at, key
			}
		}
	}
	return nil, ""
}

// askAnnotations are the keywords askBound ignores: they narrow what a
// schema admits or annotate it, and never widen it.
var askAnnotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "format": true, "pattern": true, "minLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "minItems": true, "uniqueItems": true, "required": true,
	"minProperties": true, "maxProperties": true, "readOnly": true, "writeOnly": true, "deprecated": true,
}

// askDraft is the only dialect an ask may name in "$schema": the one
// askBound reads the keywords of (JSON Schema 2020-12 Core §8.1.1).
const askDraft = "https://json-schema.org/draft/2020-12/schema"

// askKeywords are the keywords askBound reads.
var askKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "maxLength": true, "maxItems": true,
	"items": true, "properties": true, "additionalProperties": true,
}

// askBound bounds the JSON text of any answer schema s (decoded with
// encoding/json; at is its JSON Pointer in the ask) admits, as Step
// Functions holds it: a string with maxLength at 6 bytes a character and
// its quotes (RFC 8259 §7), an enum or const at its longest member's JSON
// escaped alike, a number or integer at numberBytes, a boolean 5, null 4,
// an array at most maxItems bounded items, an object with
// additionalProperties false and bounded properties; a type list at its
// largest type. Any other keyword that may widen what s admits (a $ref, a
// combinator, patternProperties...) leaves it unbounded, and so does a
// "$schema" naming another dialect than askDraft, whose keywords mean
// other things (draft-04 has no const). why says why, at
// the location at, when the answer is unbounded.
func askBound(s any, at string) (n int, where, why string) {
	if b, ok := s.(bool); ok {
		if !b {
			return 0, "", ""
		}
		return 0, at, "the schema true admits any value"
	}
	m, ok := s.(map[string]any)
	if !ok {
		return 0, at, "not a schema object"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !askAnnotations[k] && !askKeywords[k] {
			return 0, at + "/" + k, fmt.Sprintf("the keyword %q is not read for the bound", k)
		}
	}
	if d, ok := m["$schema"]; ok && d != askDraft {
		// Another dialect reads the keywords otherwise (draft-04 has no
		// const, so {"const": "a"} admits any value there).
		return 0, at + "/$schema", fmt.Sprintf("the bound is read as JSON Schema 2020-12: $schema may only name %s", askDraft)
	}
	if c, ok := m["const"]; ok {
		return escapedJSON(c), "", ""
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		for _, v := range e {
			n = max(n, escapedJSON(v))
		}
		return n, "", ""
	}
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
	}
	if len(types) == 0 {
		return 0, at, "it names no type (nor enum or const)"
	}
	for _, t := range types {
		k, w, y := askTypeBound(m, t, at)
		if y != "" {
			return 0, w, y
		}
		n = max(n, k)
	}
	return n, "", ""
}

// askTypeBound is askBound for one type of schema m.
func askTypeBound(m map[string]any, t, at string) (int, string, string) {
	switch t {
	case "boolean":
		return 5, "", ""
	case "null":
		return 4, "", ""
	case "number", "integer":
		return numberBytes, "", ""
	case "string":
		n, ok := schemaInt(m["maxLength"])
		if !ok {
			return 0, at, "a string needs maxLength (or enum or const)"
		}
		return 6*n + 2, "", ""
	case "array":
		n, ok := schemaInt(m["maxItems"])
		if !ok {
			return 0, at, "an array needs maxItems"
		}
		items, ok := m["items"]
		if !ok {
			return 0, at, "an array needs items, a bounded schema"
		}
		item, w, why := askBound(items, at+"/items")
		if why != "" {
			return 0, w, why
		}
		return listBound(n, item), "", ""
	case "object":
		if m["additionalProperties"] != false {
			return 0, at, "an object needs additionalProperties: false"
		}
		props, _ := m["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		total := 2
		for _, name := range names {
			k, w, why := askBound(props[name], at+"/properties/"+pointerEscaper.Replace(name))
			if why != "" {
				return 0, w, why
			}
			total = min(total+6*len(name)+4+k, maxSchemaBound)
		}
		return total, "", ""
	}
	return 0, at, fmt.Sprintf("type %q is not a JSON Schema type", t)
}

// pointerEscaper escapes a JSON Pointer reference token (RFC 6901 §3).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapedJSON bounds v's JSON text once Step Functions escapes it: 6
// bytes a byte of its strings, numbers at numberBytes.
func escapedJSON(v any) int {
	switch x := v.(type) {
	case string:
		return 6*len(x) + 2
	case float64, json.Number:
		return numberBytes
	case bool:
		return 5
	case nil:
		return 4
	case []any:
		n := 2
		for _, e := range x {
			n += escapedJSON(e) + 1
		}
		return n
	case map[string]any:
		n := 2
		for k, e := range x {
			n += 6*len(k) + 4 + escapedJSON(e)
		}
		return n
	}
	return MaxStateBytes
}

// decodeEditable decodes review.editable: 1..tool.MaxEditable distinct
// member names, for a review of a call only. checkEditable checks them
// against the reviewed tool's input schema.
func (d *decoder) decodeEditable(st *Step, f *field, what string) {
	if f.val.kind != kList || len(f.val.items) == 0 || len(f.val.items) > tool.MaxEditable {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.editable must be a list of 1 to %d names of the reviewed tool's input members", what, tool.MaxEditable)
		return
	}
	st.EditablePos = f.val.pos
	for _, r := range d.strings(f, what+" review.editable") {
		switch {
		case r.Name == "":
			d.ds.errorf(r.Pos, RuleInvalidValue, "%s review.editable holds an empty name", what)
		case slices.ContainsFunc(st.Editable, func(e Ref) bool { return e.Name == r.Name }):
			d.ds.errorf(r.Pos, RuleInvalidValue, "%s review.editable lists %q twice", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."))
		default:
			st.Editable = append(st.Editable, r)
		}
	}
}

// decodeNotify decodes review.notify: 1..tool.MaxNotify distinct literal
// addr-specs (shared/recipient Parse; RFC 5322 §3.4.1), no bindings.
func (d *decoder) decodeNotify(st *Step, f *field, what string) {
	if f.val.kind != kList || len(f.val.items) == 0 || len(f.val.items) > tool.MaxNotify {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.notify must be a list of 1 to %d e-mail addresses (one notice, at most %d recipients: Amazon SES quotas)", what, tool.MaxNotify, tool.MaxNotify)
		return
	}
	var seen []recipient.Address
	for _, r := range d.strings(f, what+" review.notify") {
		if strings.Contains(r.Name, "${") {
			d.ds.errorf(r.Pos, RuleRecipient, "%s review.notify %q holds a binding: the addresses told of a review are literal, fixed when the Solution is published", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."))
			continue
		}
		a, err := recipient.Parse(r.Name)
		if err != nil {
			d.ds.errorf(r.Pos, RuleRecipient, "%s review.notify: %v", what, err)
			continue
		}
		if slices.ContainsFunc(seen, a.Equal) {
			d.ds.errorf(r.Pos, RuleRecipient, "%s review.notify lists %q twice", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."))
			continue
		}
		seen = append(seen, a)
		st.Notify = append(st.Notify, r.Name)
		st.NotifyPos = append(st.NotifyPos, r.Pos)
	}
}

// reviewSlot is the name of a review step's result slot under
// $.reviews: a review of a call writes its tool step's (which the tool's
// Task sends as its approval), a review that shows values its own id
// (step ids are unique, so the two never meet).
func (st *Step) reviewSlot() string {
	if st.Show != nil {
		return st.ID
	}
	return st.Of.Name
}

// showsValues reports whether st is a review that shows values (review.show)
// and approves no call.
func (st *Step) showsValues() bool { return st.Kind == KindReview && st.Show != nil }

// checkEditable checks each review's editable names: none on a review
// that shows values; none on a review of a step Gate A does not gate
// (stepGated: its call carries no approval, so the dispatcher would never
// merge the edits; docs/reviews.md, "Approve with edits"); each a
// top-level property of the reviewed tool's
// input schema; none that decides where the call's effect lands
// (catalog.EffectTargets), [review-edit].
func (c *checker) checkEditable() {
	for _, st := range c.sol.Steps {
		if st.Kind != KindReview || len(st.Editable) == 0 {
			continue
		}
		if st.Show != nil {
			c.ds.errorf(st.EditablePos, RuleInvalidValue, "review %q shows values: editable is for a review of a call (of), whose input members the reviewer may replace", st.ID)
			continue
		}
		j, ok := c.index[st.Of.Name]
		if !ok || st.OfUnusable || c.tools[j] == nil {
			continue
		}
		t := c.tools[j]
		if !c.stepGated(j) {
			// Only a gated call carries its approval to the dispatcher,
			// which merges the edits: an ungated call would run with the
			// input as it was shown, whatever the reviewer wrote.
			c.ds.errorf(st.EditablePos, RuleInvalidValue, "review %q: step %q (%s) runs without an approval, so edits would never reach it and it would run with the input as shown; add %s to policy.review_before, or drop editable",
				st.ID, st.Of.Name, t.Name, t.Name)
			continue
		}
		var doc struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(t.InputSchema, &doc)
		fixed := catalog.EffectTargets(t.Name)
		for _, r := range st.Editable {
			switch {
			case slices.Contains(fixed, r.Name):
				c.ds.errorf(r.Pos, RuleReviewEdit, "review %q: %s's %q decides where the call's effect lands (%s), so a reviewer may never edit it; change it in the Solution, or reject", st.ID, t.Name, r.Name, strings.Join(fixed, ", "))
			case doc.Properties[r.Name] == nil:
				names := make([]string, 0, len(doc.Properties))
				for k := range doc.Properties {
					if !slices.Contains(fixed, k) {
						names = append(names, k)
					}
				}
				sort.Strings(names)
				c.ds.errorf(r.Pos, RuleInvalidValue, "review %q: editable %q is not an input member of tool %s (editable: %s)", st.ID, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."), t.Name, strings.Join(names, ", "))
			}
		}
	}
}

// askBytes bounds the answer of review step st as it lands in its slot
// and decision: 0 when it asks nothing.
func askBytes(st *Step) int {
	if st.Ask == nil {
		return 0
	}
	var doc any
	b, _ := json.Marshal(st.Ask.plain())
	if json.Unmarshal(b, &doc) != nil {
		return tool.MaxAnswerBytes
	}
	n, _, why := askBound(doc, "")
	if why != "" {
		return tool.MaxAnswerBytes
	}
	return n
}

// reviewAskedBytes is the JSON of a review Task's ask, editable and
// notify members, as written into its payload.
func reviewAskedBytes(st *Step) int {
	n := 0
	if st.Ask != nil {
		b, _ := json.Marshal(st.Ask.plain())
		n += len(`,"ask":`) + len(b)
	}
	if len(st.Editable) > 0 {
		names := make([]string, len(st.Editable))
		for k, r := range st.Editable {
			names[k] = r.Name
		}
		b, _ := json.Marshal(names)
		n += len(`,"editable":`) + len(b)
	}
	if len(st.Notify) > 0 {
		b, _ := json.Marshal(st.Notify)
		n += len(`,"notify":`) + len(b)
	}
	return n
}

// editBytes bounds what the decision JSON of an approval with edits of
// review step st adds to what reviewBytes bounds (tool.ReviewDecision):
// the edited member names, at most st.Editable, each escaped as
// escapedJSON counts a string, and the reviewed digest ("sha256:" and 64
// hex digits); 0 for a review without editable.
func editBytes(st *Step) int {
	if len(st.Editable) == 0 {
		return 0
	}
	n := len(`,"edited":[]`) + len(`,"reviewed_digest":"sha256:"`) + 64
	for _, r := range st.Editable {
		n += 6*len(r.Name) + 2 + 1
	}
	return n
}

// reviewAnswerBytes bounds what the approval of tool step id may carry
// beyond reviewBytes: the largest answer and edited names of its
// reviews' (0 when none asks and none has editable).
func (c *checker) reviewAnswerBytes(id string) int {
	n := 0
	for _, r := range c.sol.Steps {
		if r.Kind == KindReview && r.Show == nil && r.Of.Name == id {
			n = max(n, askBytes(r)+editBytes(r))
		}
	}
	return n
}

// showsOnPath explains a Gate A path to tool step t through reviews that
// show values, which approve no call: it names them, or is "".
func (c *checker) showsOnPath(path []int, t int) string {
	var shows []string
	for _, i := range path {
		if c.sol.Steps[i].showsValues() && !slices.Contains(shows, c.sol.Steps[i].ID) {
			shows = append(shows, fmt.Sprintf("%q", c.sol.Steps[i].ID))
		}
	}
	if len(shows) == 0 {
		return ""
	}
	return fmt.Sprintf(" (review %s shows values and approves no tool call: %q needs a review with review.of: %s)", strings.Join(shows, ", "), c.sol.Steps[t].ID, c.sol.Steps[t].ID)
}
