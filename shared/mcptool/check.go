package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// SchemaChanged starts the message of the CALL_PARKED error Check returns.
const SchemaChanged = "tool.schema_changed"

// cached is a listing Check may reuse until at + Config.SchemaTTL.
type cached struct {
	at time.Time
	l  *listing
}

// Check compares the server's current definition of a pinned MCP tool
// (call.Pinned.MCP) with its pin before the call is claimed: a
// toolcall.Check (c.Check). A tool that is not an MCP tool passes.
//
// The server's definition comes from a tools/list in a new session (so
// the SDK's own list cache, whose lifetime the server sets, is never
// used), reused by this Client for the same server URL for at most
// Config.SchemaTTL, and with the same credential (call.Credential, which
// the listing presents: its scope and version). The definitions compared are {description,
// inputSchema, outputSchema, annotations}, an absent description being "",
// an absent outputSchema and absent or empty annotations being {}, in
// their RFC 8785 form: the description is what an MCP client shows a
// model as the tool's meaning, and what the toolset's publisher and
// reviewers read, so a server that says its tool does something else has
// changed it too.
//
// A tool the server no longer lists, lists more than once, or lists with
// another definition, is not called: the error is a *tool.Error with code tool.CallParked whose
// message starts with SchemaChanged and gives both definitions' digests
// ("sha256:" and the hex SHA-256 of the RFC 8785 form) and, for a changed
// one, the JSON Pointers of what was added, removed or changed (at most
// 20; "changed /description" for a new description: neither text, the
// server's own and as long as it likes, is quoted). A listing that fails
// is the *tool.Error of the failure, never maybe applied (the package
// documentation's table).
//
// A call sent again after a person approved its park (call.ApprovedDigest
// set) passes when the server's definition digests to exactly the one
// approved, and its input matches that definition's input schema
// (TOOL_INPUT_INVALID naming the problems, never a value); any other
// definition parks it again.
//
// Under a toolset whose on_schema_change is allow_additive_input
// (call.Toolset.AllowsAdditiveInput), a definition whose every change is
// Additive (Classify; at most maxChangesCounted of them) does not park
// the call when its input, already checked against the pinned input
// schema, matches the server's input schema too: Check sets
// call.SchemaChange (class additive, both digests) and passes. Any other
// change, or an input the server's schema refuses, parks the call
// (docs/parking.md, "allow_additive_input").
//
// A CALL_PARKED error's Err is a *park.Detail (cause tool.schema_changed)
// with both digests (the current one "" when the server lists the tool
// no more) and, for a changed definition, its changed JSON Pointers
// (sorted, at most park.MaxChangedPointers) and those of them Classify
// calls additive, which the dispatcher records on the PARKED row
// (docs/parking.md, "The PARKED row").
func (c *Client) Check(ctx context.Context, call *toolcall.Call) error {
	err := c.check(ctx, call)
	if err == nil {
		return nil
	}
	var detail *park.Detail
	errors.As(err, &detail)
	te := call.Credential.RedactError(tool.Classify(err))
	if detail != nil && !errors.As(te.Err, new(*park.Detail)) {
		// Redacting made the cause text: the detail holds names and
		// digests only, and its own cause is the redacted one.
		d := *detail
		d.Err = te.Err
		te.Err = &d
	}
	return te
}

func (c *Client) check(ctx context.Context, call *toolcall.Call) error {
	m := call.Pinned.MCP
	if m == nil {
		return nil
	}
	l, te := c.current(ctx, m.URL, call.Credential)
	if te != nil {
		return te
	}
	name := m.Server + "." + m.Name
	pinned, err := definition(call.Pinned.Description, call.Pinned.InputSchema, call.Pinned.OutputSchema, m.Annotations)
	if err != nil {
		return tool.Wrap(tool.Internal, err, "the pinned definition of MCP tool %s cannot be put in its RFC 8785 form", name)
	}
	i := slices.IndexFunc(l.Tools, func(t toolset.ListedTool) bool { return t.Name == m.Name })
	if i < 0 {
		why := "no longer lists it"
		if slices.Contains(l.dropped, fmt.Sprintf("%q", clean(m.Name, 130))) {
			why = "lists it in a form the MCP Go SDK drops as invalid"
		}
		return tool.Wrap(tool.CallParked, &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinned.digest},
			"%s: MCP tool %s was not called: its server (%s) %s; pinned %s, server none",
			SchemaChanged, name, l.host, why, pinned.digest)
	}
	t := l.Tools[i]
	current, err := definition(t.Description, t.InputSchema, t.OutputSchema, t.Annotations)
	if err != nil {
		return tool.Wrap(tool.CallParked, &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinned.digest, Err: err},
			"%s: MCP tool %s was not called: its server's (%s) definition cannot be put in its RFC 8785 form; pinned %s",
			SchemaChanged, name, l.host, pinned.digest)
	}
	if n := countNamed(l.Tools, m.Name); n > 1 {
		// Which definition a call would run is the server's to choose.
		return tool.Wrap(tool.CallParked, &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinned.digest, CurrentDigest: current.digest},
			"%s: MCP tool %s was not called: its server (%s) lists it %d times; pinned %s, server %s (the first)",
			SchemaChanged, name, l.host, n, pinned.digest, current.digest)
	}
	if bytes.Equal(pinned.canonical, current.canonical) {
		return nil
	}
	if call.ApprovedDigest != "" && current.digest == call.ApprovedDigest {
		// A person approved this very definition for the call: it is
		// sent under it, its input checked against its input schema and
		// its result read against its output schema.
		if err := approvedInput(name, t.InputSchema, call.Input); err != nil {
			return err
		}
		call.ApprovedOutputSchema = json.RawMessage(`{}`)
		if len(t.OutputSchema) > 0 {
			call.ApprovedOutputSchema = t.OutputSchema
		}
		return nil
	}
	// Every change, for the row's sorted pointers; the message names the
	// first maxDiffPaths in the order diff visits them.
	changes, more := diff(pinned.value, current.value, maxChangesCounted)
	classes := classify(pinned.value, current.value, changes)
	if more == 0 && call.Toolset.AllowsAdditiveInput() && AllAdditive(classes) &&
		approvedInput(name, t.InputSchema, call.Input) == nil {
		// on_schema_change allow_additive_input: the input, checked
		// against the pinned input schema, matches the server's too.
		call.SchemaChange = &toolcall.SchemaChange{Class: string(Additive), PinnedDigest: pinned.digest, CurrentDigest: current.digest}
		return nil
	}
	pointers := make([]string, len(changes))
	// A pointer is kept cut (park.CutPointer): the cut form is additive
	// only when every pointer cut to it is.
	additive := map[string]bool{}
	for i, ch := range changes {
		pointers[i] = ch.path
		cut := park.CutPointer(ch.path)
		if was, seen := additive[cut]; !seen || was {
			additive[cut] = classes[i].Class == Additive
		}
	}
	shown := changes[:min(len(changes), maxDiffPaths)]
	detail := &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinned.digest, CurrentDigest: current.digest, ChangedPointers: park.SortedPointers(pointers)}
	for _, p := range detail.ChangedPointers {
		if additive[p] {
			detail.AdditivePointers = append(detail.AdditivePointers, p)
		}
	}
	return tool.Wrap(tool.CallParked, detail, "%s: MCP tool %s was not called: its server (%s) defines it otherwise than its pin; pinned %s, server %s; %s",
		SchemaChanged, name, l.host, pinned.digest, current.digest, describe(shown, more+len(changes)-len(shown)))
}

// approvedInput checks input against the input schema of the definition
// a person approved (the server's current one): TOOL_INPUT_INVALID naming
// each problem by JSON Pointer and keyword, never a value
// (schema.RedactedLines), or, when that schema does not compile,
// TOOL_INPUT_INVALID saying so: the call cannot be checked against what
// was approved.
func approvedInput(name string, inputSchema, input json.RawMessage) error {
	s, err := schema.Compile(inputSchema)
	if err != nil {
		return tool.Wrap(tool.InputInvalid, err, "the approved input schema of MCP tool %s does not compile, so the call cannot be checked against it", name)
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return tool.Wrap(tool.InputInvalid, err, "input is not valid JSON")
	}
	if err := s.Validate(v); err != nil {
		return tool.Errorf(tool.InputInvalid, "input does not match the approved input schema of MCP tool %s: %s",
			name, strings.Join(schema.RedactedLines(schema.Problems(err, nil), "input", maxInputProblems), "; "))
	}
	return nil
}

// maxInputProblems bounds the schema problems approvedInput lists.
const maxInputProblems = 10

// maxChangesCounted bounds the changes Check collects of one definition
// before it sorts them for the row (park.MaxChangedPointers of them are
// kept): a definition a server lists is at most a few thousand values.
const maxChangesCounted = 1 << 14

// countNamed counts the tools named name.
func countNamed(tools []toolset.ListedTool, name string) int {
	n := 0
	for _, t := range tools {
		if t.Name == name {
			n++
		}
	}
	return n
}

// current returns the server's listing with cred (nil: none), from the
// cache while it is younger than Config.SchemaTTL; the cache is keyed by
// the server URL and the credential's scope and version (keyOf).
func (c *Client) current(ctx context.Context, url string, cred *credential.Credential) (*listing, *tool.Error) {
	key := keyOf(url, cred)
	ttl := c.cfg.SchemaTTL
	now := c.now()
	if ttl > 0 {
		c.mu.Lock()
		e, ok := c.cache[key]
		c.mu.Unlock()
		if ok && !now.Before(e.at) && now.Sub(e.at) < ttl {
			return e.l, nil
		}
	}
	l, te := c.list(ctx, url, cred)
	if te != nil {
		return nil, te
	}
	if ttl > 0 {
		c.mu.Lock()
		for k, e := range c.cache {
			if now.Sub(e.at) >= ttl {
				delete(c.cache, k)
			}
		}
		c.cache[key] = cached{at: now, l: l}
		c.mu.Unlock()
	}
	return l, nil
}

// def is a tool's definition as Check compares it.
type def struct {
	canonical []byte // RFC 8785 form
	digest    string // "sha256:" and the hex SHA-256 of canonical
	value     any    // canonical, decoded, for diff
}

// definition builds {description, inputSchema, outputSchema,
// annotations}: an absent input schema is null, an absent (or null) output
// schema or annotations {}.
func definition(description string, input, output, annotations json.RawMessage) (def, error) {
	orEmpty := func(raw json.RawMessage) json.RawMessage {
		if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
			return json.RawMessage(`{}`)
		}
		return raw
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`null`)
	}
	desc, err := json.Marshal(description)
	if err != nil {
		return def{}, err
	}
	raw, err := json.Marshal(map[string]json.RawMessage{"description": desc, "inputSchema": input, "outputSchema": orEmpty(output), "annotations": orEmpty(annotations)})
	if err != nil {
		return def{}, err
	}
	// The contract's one RFC 8785 digest; it refuses a number the form
	// would change, which the SDK's decoding (doubles) never yields.
	canonical, digest, err := tool.InputDigest(raw)
	if err != nil {
		return def{}, err
	}
	var v any
	if err := json.Unmarshal(canonical, &v); err != nil {
		return def{}, err
	}
	return def{canonical: canonical, digest: digest, value: v}, nil
}
