package toolset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gowebpki/jcs"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
)

// Tool is what a toolset pins of one tool: its contract at the time the
// toolset was built, and its effective review requirement.
type Tool struct {
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	// Idempotent: the tool honours the idempotency key.
	Idempotent bool           `json:"idempotent"`
	Policy     catalog.Policy `json:"policy"`
	// ReviewRequired is the catalog's value or the Solution's
	// policy.review_before; a Solution can add a tool, never remove one.
	ReviewRequired bool `json:"review_required"`

	// The members below are pinned for platform tools only (a tool that is
	// not in the catalog: any Lambda function, run through toolgate's
	// proxy, docs/toolsets.md). They are omitted when empty, so a toolset
	// of catalog tools has the content, and the id, it always had.

	// Function is the platform tool's Lambda function as the toolset file
	// names it: a placeholder "${Function<CamelCase>}" (FunctionPattern),
	// which publishing replaces with the ARN the stage's SSM parameter
	// ToolFunctionParam holds, or a Lambda function ARN (LambdaARNPattern).
	// It is pinned as written, not as resolved: the id is then the same in
	// every stage and can be computed offline from the file.
	Function string `json:"function,omitempty"`
	// TimeoutSeconds is the platform tool function's timeout, in seconds
	// (1..900, Lambda's maximum): a step's timeout_seconds is at most this,
	// and its Task waits this plus catalog.TaskTimeoutMargin.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// Retry is the platform tool's default retry for its steps (the
	// Solution grammar's units; nil: one attempt). More than one attempt of
	// a tool that does not honour idempotency keys needs
	// TolerateDuplicates.
	Retry *catalog.Retry `json:"retry,omitempty"`
	// TolerateDuplicates is the platform team's consent that the tool's
	// steps may retry it although it does not honour idempotency keys.
	TolerateDuplicates bool `json:"tolerate_duplicates,omitempty"`
	// MCP is set for a tool an MCP server defines (mcp.go): the server,
	// the tool's exact name, its annotations and the negotiated revision.
	// Its timeout, retry and tolerance are as a platform tool's.
	MCP *MCP `json:"mcp,omitempty"`
}

// Values of a toolset file's on_schema_change (docs/toolsets.md;
// docs/parking.md, "allow_additive_input"). A pinned toolset holds
// OnSchemaChangePark as "".
const (
	// OnSchemaChangePark parks every call whose MCP tool changed: the
	// default.
	OnSchemaChangePark = "park"
	// OnSchemaChangeAllowAdditiveInput sends a call whose MCP tool only
	// changed additively (shared/mcptool, AllAdditive), its input checked
	// against both the pinned and the server's input schema, and parks
	// any other.
	OnSchemaChangeAllowAdditiveInput = "allow_additive_input"
)

// AllowsAdditiveInput reports whether ts sends a call whose MCP tool only
// changed additively instead of parking it (OnSchemaChange); false for a
// nil ts.
func (ts *Toolset) AllowsAdditiveInput() bool {
	return ts != nil && ts.OnSchemaChange == OnSchemaChangeAllowAdditiveInput
}

// Platform reports whether the pinned tool is a platform tool: one that
// names its own Lambda function.
func (t *Tool) Platform() bool { return t.Function != "" }

// FunctionPattern is the shape of a platform tool's function placeholder:
// "${Function" and letters and digits, as CloudFormation's
// DefinitionSubstitutions keys are.
var FunctionPattern = tool.NewPattern(`^\$\{(Function[A-Z][A-Za-z0-9]{0,62})\}$`, `^\$\{(Function[A-Z][A-Za-z0-9]*)\}$`, len("${Function}")+1+62, nil)

// LambdaARNPattern is the shape of a Lambda function ARN a platform tool
// may name instead of a placeholder: partition, region, account, name and
// an optional version or alias qualifier (the Lambda API's FunctionName
// pattern; at most 140 characters).
var LambdaARNPattern = tool.NewPattern(
	`^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:\d{12}:function:[a-zA-Z0-9-_]{1,64}(:(\$LATEST|[a-zA-Z0-9-_]{1,128}))?$`,
	`^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:\d{12}:function:[a-zA-Z0-9-_]+(:(\$LATEST|[a-zA-Z0-9-_]+))?$`,
	-1, lambdaARNFits)

// lambdaARNFits reports whether a LambdaARNPattern match's function name
// (the seventh ":" field; no earlier field holds a ":") is at most 64
// bytes and its qualifier (submatch 6) $LATEST or at most 128 bytes: the
// classes are ASCII, so bytes are runes.
func lambdaARNFits(m []string) bool {
	return len(strings.Split(m[0], ":")[6]) <= 64 && len(m[6]) <= 128
}

// ToolFunctionParam names the SSM parameter under /toolgate/<stage>/ that
// holds the ARN of a platform tool's function placeholder key
// ("FunctionCreateTicket"): a namespace apart from toolgate's own
// functions', so that no placeholder a team writes can resolve to one of
// them.
func ToolFunctionParam(stage, key string) string {
	return fmt.Sprintf("/toolgate/%s/tool-function/%s/arn", stage, key)
}

// Toolset is the pinned list of tools (by name) and the http tool's
// allowed hosts, in the canonical form of package hostlist. A registered
// toolset (a toolset file, docs/toolsets.md) also carries its name, the
// toolset it is derived from and the Solutions its runs may start; a
// toolset a Solution derives from the catalog has none of them, and they
// are left out of its content.
type Toolset struct {
	ID string `json:"id"`
	// Name is the toolset file's toolset: ([a-z][a-z0-9-]{0,49}).
	Name string `json:"name,omitempty"`
	// Base is the id of the registered toolset this one is derived from:
	// the same tools, policies no weaker, other workflows.
	Base       string          `json:"base,omitempty"`
	Tools      map[string]Tool `json:"tools"`
	FetchHosts []string        `json:"fetch_hosts"`
	// HTTPHosts are the http tool's host entries (HTTPHost), sorted by
	// host and unique; omitted when empty, so that a toolset without them
	// has the content, and the id, it always had. None: no http tool.
	HTTPHosts []HTTPHost `json:"http_hosts,omitempty"`
	// Workflows names the Solutions runs of this toolset may start
	// (a workflow: step), sorted and unique.
	Workflows []string `json:"workflows,omitempty"`
	// OnSchemaChange is what a call does when its MCP tool's definition
	// changed on its server since the toolset pinned it (docs/parking.md,
	// "allow_additive_input"): "" parks it (the toolset file's park, the
	// default), OnSchemaChangeAllowAdditiveInput sends it when every
	// change is additive (shared/mcptool, Classify). Omitted when "", so
	// that a toolset without it has the content, and the id, it always
	// had.
	OnSchemaChange string `json:"on_schema_change,omitempty"`
	// MCPServers are the MCP servers of a draft (a toolset file compiled
	// before registration, mcp.go): registration lists their tools and pins
	// the admitted ones into Tools (ResolveMCP). A draft has no id; a
	// registered toolset has no MCPServers.
	MCPServers map[string]MCPServer `json:"mcp_servers,omitempty"`
	// Observed are the shapes the toolset's tools learned, as a lock may
	// carry them (`toolgate shapes --lock`, docs/declarations.md,
	// "Reading them"): not part of the content, so the id does not
	// change with them, and never stored or registered. Parse checks that
	// it names this toolset and only its tools.
	Observed *observed.File `json:"observed,omitempty"`
}

// content is what a toolset's id is the digest of: the toolset without
// its id.
type content struct {
	Name       string          `json:"name,omitempty"`
	Base       string          `json:"base,omitempty"`
	Tools      map[string]Tool `json:"tools"`
	FetchHosts []string        `json:"fetch_hosts"`
	HTTPHosts  []HTTPHost      `json:"http_hosts,omitempty"`
	Workflows  []string        `json:"workflows,omitempty"`
	// OnSchemaChange is Toolset.OnSchemaChange.
	OnSchemaChange string `json:"on_schema_change,omitempty"`
}

// FromCatalog pins the named catalog tools. reviewBefore names tools whose
// review is required in addition to the catalog's list. fetchHosts are
// copied, sorted and de-duplicated; they must already be canonical.
// httpHosts, the http tool's entries, are put in their pinned form
// (CanonicalHTTPHosts), whose error this returns. The returned toolset
// carries its id.
func FromCatalog(c *catalog.Catalog, names, reviewBefore, fetchHosts []string, httpHosts ...HTTPHost) (*Toolset, error) {
	ts := &Toolset{Tools: make(map[string]Tool, len(names))}
	for _, name := range names {
		t, ok := c.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("tool %q is not in the catalog", name)
		}
		ts.Tools[name] = Tool{
			Description:    t.Description,
			InputSchema:    t.InputSchema,
			OutputSchema:   t.OutputSchema,
			Idempotent:     t.Idempotent,
			Policy:         t.Policy,
			ReviewRequired: t.ReviewRequired || slices.Contains(reviewBefore, name),
		}
	}
	ts.FetchHosts = slices.Compact(slices.Sorted(slices.Values(fetchHosts)))
	var err error
	if ts.HTTPHosts, err = CanonicalHTTPHosts(httpHosts); err != nil {
		return nil, fmt.Errorf("http_hosts: %w", err)
	}
	return ts.withID()
}

// withID returns ts with its id set (ComputeID), fetch_hosts [] rather
// than absent.
func (ts *Toolset) withID() (*Toolset, error) {
	if ts.FetchHosts == nil {
		ts.FetchHosts = []string{}
	}
	id, err := ts.ComputeID()
	if err != nil {
		return nil, err
	}
	ts.ID = id
	return ts, nil
}

// Canonical returns the RFC 8785 form of the toolset without its id: the
// bytes the id is the digest of.
func (ts *Toolset) Canonical() ([]byte, error) {
	body := content{Name: ts.Name, Base: ts.Base, Tools: ts.Tools, FetchHosts: ts.FetchHosts, HTTPHosts: ts.HTTPHosts, Workflows: ts.Workflows, OnSchemaChange: ts.OnSchemaChange}
	if body.FetchHosts == nil {
		body.FetchHosts = []string{}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode toolset: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalize toolset: %w", err)
	}
	return out, nil
}

// ComputeID returns "ts_" and the first 32 hex digits of the SHA-256 of
// Canonical().
func (ts *Toolset) ComputeID() (string, error) {
	if len(ts.MCPServers) > 0 {
		return "", fmt.Errorf("the toolset names MCP servers whose tools are not listed yet: register it (toolgate toolset register) to pin them")
	}
	c, err := ts.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return "ts_" + hex.EncodeToString(sum[:16]), nil
}

// Parse decodes a toolset document strictly (unknown fields are errors) and
// checks that its id is the digest of its content (a lock's "observed"
// member, read by observed.ParseFile, is no part of it, and must name
// this toolset and only its tools): a document that does
// not decode is a *Refusal for RuleFormat, a wrong id one for RuleDigest.
// It does not check the tools against the catalog; Verify does.
func Parse(data []byte) (*Toolset, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ts Toolset
	if err := dec.Decode(&ts); err != nil {
		return nil, refuse(ts.ID, RuleFormat, "decode toolset: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, refuse(ts.ID, RuleFormat, "data after the toolset object")
	}
	if !tool.ToolsetIDPattern.MatchString(ts.ID) {
		return nil, refuse(ts.ID, RuleDigest, "the id does not match %s", tool.ToolsetIDPattern)
	}
	want, err := ts.ComputeID()
	if err != nil {
		return nil, refuse(ts.ID, RuleFormat, "%v", err)
	}
	if want != ts.ID {
		return nil, refuse(ts.ID, RuleDigest, "the content digests to %s, not to its id", want)
	}
	// What was decoded must be all the document says: Go's decoder matches
	// member names in any letter case and keeps the last of duplicates, so
	// a document could show one value and register another.
	shown, err := jcs.Transform(data)
	if err != nil {
		return nil, refuse(ts.ID, RuleFormat, "the document is not canonicalizable JSON (RFC 8785): %v", err)
	}
	decoded, err := json.Marshal(&ts)
	if err == nil {
		decoded, err = jcs.Transform(decoded)
	}
	if err != nil || !bytes.Equal(shown, decoded) {
		return nil, refuse(ts.ID, RuleFormat, "the document holds members that are not the toolset's fields, in their exact names, once each")
	}
	if ts.Observed != nil {
		if ts.Observed.Toolset != ts.ID {
			return nil, refuse(ts.ID, RuleFormat, "observed: the shapes are of toolset %s, not of this one", ts.Observed.Toolset)
		}
		for _, name := range ts.Observed.ToolNames() {
			if _, ok := ts.Tools[name]; !ok {
				return nil, refuse(ts.ID, RuleFormat, "observed: tool %q is not in the toolset", name)
			}
		}
	}
	return &ts, nil
}

// ParseStored decodes a stored toolset item: id is the item's key, body
// its "body" attribute. The body must be exactly Canonical() of a toolset
// (no id member, in any letter case, no other form): otherwise a body
// naming another id, or written with other spacing or duplicate members,
// would load as content its key does not name. A failure is a *Refusal for
// RuleFormat naming id. The result still needs Verify (the digest and the
// catalog rules).
func ParseStored(id string, body []byte) (*Toolset, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var c content
	if err := dec.Decode(&c); err != nil {
		return nil, refuse(id, RuleFormat, "the stored body does not decode: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	ts := &Toolset{ID: id, Name: c.Name, Base: c.Base, Tools: c.Tools, FetchHosts: c.FetchHosts, HTTPHosts: c.HTTPHosts, Workflows: c.Workflows, OnSchemaChange: c.OnSchemaChange}
	canonical, err := ts.Canonical()
	if err != nil {
		return nil, refuse(id, RuleFormat, "%v", err)
	}
	if !bytes.Equal(canonical, body) {
		return nil, refuse(id, RuleFormat, "the stored body is not the toolset's RFC 8785 form")
	}
	return ts, nil
}

// Bounds of a pinned schema (toolgate's own, docs/ledger.md): the
// catalog's schemas are under 1 KiB, 7 levels deep, with no reference. A
// schema past them could make its compilation or every validation of an
// input take longer than the function's timeout (deep "not" chains, or
// "$ref"s that fan out through "allOf"), before any approval is checked.
const (
	MaxSchemaBytes = 64 << 10
	MaxSchemaDepth = 32
	MaxSchemaRefs  = 16
)

// CheckSchemaSize refuses a schema document (compact JSON, as pinned) over
// MaxSchemaBytes, nested deeper than MaxSchemaDepth, or with more than
// MaxSchemaRefs reference keywords ($ref, $dynamicRef, $recursiveRef). Its
// error is the predicate alone ("is 70937 bytes, over 65536"), for the
// caller to name the schema. Verify applies it to every pinned schema; a
// toolset file's compiler applies it to each schema where it is written.
func CheckSchemaSize(doc json.RawMessage) error {
	if len(doc) > MaxSchemaBytes {
		return fmt.Errorf("is %d bytes, over %d", len(doc), MaxSchemaBytes)
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("is not JSON: %v", err)
	}
	refs := 0
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		var children []any
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" {
					refs++
				}
				children = append(children, c)
			}
		case []any:
			children = v
		default:
			return nil
		}
		if depth > MaxSchemaDepth {
			return fmt.Errorf("is nested deeper than %d levels", MaxSchemaDepth)
		}
		if refs > MaxSchemaRefs {
			return fmt.Errorf("has more than %d references", MaxSchemaRefs)
		}
		for _, c := range children {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(v, 1)
}

// MaxReasonBytes bounds a Refusal's reason (and so the "toolset refused"
// log line and the caller's message): a reason quotes parts of the
// toolset, such as a schema's compile error, which an item may make as
// large as DynamoDB's 400 KB item limit; CloudWatch Logs takes events of
// at most 256 KiB, and a cut line would not match the alarm's JSON filter.
const MaxReasonBytes = 300

// refuse builds a Refusal with the id and the reason cut to size, with
// the characters a reader cannot see escaped (invisible.Escape): a reason
// may quote a schema.
func refuse(id, rule, format string, a ...any) *Refusal {
	return &Refusal{ToolsetID: excerpt.Bytes(id, 40, "..."), Rule: rule, Reason: excerpt.Bytes(invisible.Escape(fmt.Sprintf(format, a...)), MaxReasonBytes, "...")}
}

// MarshalIndent returns the toolset as indented JSON with its id, as
// `toolgate compile` writes it.
func (ts *Toolset) MarshalIndent() ([]byte, error) {
	out, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode toolset: %w", err)
	}
	return append(out, '\n'), nil
}

// Rules a toolset can break, named in a Refusal and in the "toolset
// refused" log line (docs/ledger.md, "Toolsets are checked on every load").
const (
	// RuleFormat: the stored item or document is not a toolset (no body,
	// not JSON, unknown fields).
	RuleFormat = "toolset-format"
	// RuleDigest: the id is not "ts_" and the digest of the content.
	RuleDigest = "toolset-digest"
	// RuleReviewRequired: a tool the catalog gates is pinned without
	// review_required.
	RuleReviewRequired = "toolset-review-required"
	// RulePolicy: an at_most_once tool is pinned with another policy; or a
	// platform tool is at_least_once although it does not honour
	// idempotency keys, without tolerate_duplicates.
	RulePolicy = "toolset-policy"
	// RuleIdempotent: a tool that does not honour idempotency keys is pinned
	// as one that does.
	RuleIdempotent = "toolset-idempotent"
	// RuleSchema: a pinned input or output schema does not compile.
	RuleSchema = "toolset-schema"
	// RuleFetchHosts: fetch_hosts are not canonical host list entries
	// (package hostlist), sorted and unique.
	RuleFetchHosts = "toolset-fetch-hosts"
	// RulePlatformTool: a tool the catalog does not know names no function
	// (or a malformed one), or has a timeout, policy or retry outside the
	// tool contract; or a catalog tool carries a platform tool's members.
	RulePlatformTool = "toolset-platform-tool"
	// RuleRetry: a tool that does not honour idempotency keys is pinned
	// with more than one attempt and without tolerate_duplicates.
	RuleRetry = "toolset-retry"
	// RuleHeader: name, base, workflows or on_schema_change are malformed
	// (names must match NamePattern, workflows be sorted and unique, base
	// be a toolset id, on_schema_change absent or allow_additive_input).
	RuleHeader = "toolset-header"
	// RuleSize: the toolset's RFC 8785 form is over MaxBodyBytes, so its
	// table item would be over DynamoDB's item size limit (CheckSize).
	RuleSize = "toolset-size"
)

// NamePattern is the shape of a toolset's name and of a Solution's name
// (docs/solutions.md), so of the Solutions in a toolset's workflows: at
// most 50 characters, no "_", so that "toolgate-<stage>_<solution>" fits a
// state machine name's 80 characters with a stage of up to 20 (AWS Step
// Functions quota; tool.StateMachineName).
var NamePattern = tool.NewPattern(`^[a-z][a-z0-9-]{0,49}$`, `^[a-z][a-z0-9-]*$`, 50, nil)

// RefusedLogMessage is the "msg" of the one JSON log line a function writes
// when it refuses a toolset it loaded (with "toolset_id" and "rule"); the
// infrastructure's toolset-refused alarm filters on it.
const RefusedLogMessage = "toolset refused"

// Refusal is a toolset that fails the registration check: which toolset,
// the rule it breaks (one of the Rule constants) and why. Its message
// names tools and rules only, never inputs.
type Refusal struct {
	ToolsetID string
	Rule      string
	Reason    string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("toolset %s is refused [%s]: %s", r.ToolsetID, r.Rule, r.Reason)
}

// Verify is the registration check, which every load of a stored toolset
// runs again before the toolset is used or cached: the id is the digest of
// the content (RuleDigest); no tool is weaker than catalog c admits it
// (CheckAgainst); every pinned schema compiles as JSON Schema 2020-12
// (RuleSchema), so that no schema fails only after a tool ran; the body
// fits its table item (CheckSize, RuleSize); fetch_hosts are canonical
// host list entries (RuleFetchHosts); and http_hosts are canonical host
// entries of a toolset that pins the http tool (RuleHTTPHosts,
// CanonicalHTTPHosts); and auth declarations are well formed and one per
// target (checkAuth, RuleAuth). It returns nil or a *Refusal.
func (ts *Toolset) Verify(c *catalog.Catalog) error {
	refuse := func(rule, format string, a ...any) error { return refuse(ts.ID, rule, format, a...) }
	if !tool.ToolsetIDPattern.MatchString(ts.ID) {
		return refuse(RuleDigest, "the id does not match %s", tool.ToolsetIDPattern)
	}
	want, err := ts.ComputeID()
	if err != nil {
		return refuse(RuleDigest, "the content cannot be canonicalized: %v", err)
	}
	if want != ts.ID {
		return refuse(RuleDigest, "the content digests to %s, not to its id", want)
	}
	if err := ts.checkHeader(); err != nil {
		return err
	}
	if err := ts.CheckSize(); err != nil {
		return err
	}
	if err := ts.CheckAgainst(c); err != nil {
		return err
	}
	if err := ts.checkAuth(); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		for _, s := range []struct {
			kind string
			doc  json.RawMessage
		}{{"input", t.InputSchema}, {"output", t.OutputSchema}} {
			if err := CheckSchemaSize(s.doc); err != nil {
				return refuse(RuleSchema, "tool %s: the %s schema %v", name, s.kind, err)
			}
			if _, err := schema.Compile(s.doc); err != nil {
				return refuse(RuleSchema, "tool %s: the %s schema does not compile: %v", name, s.kind, err)
			}
		}
	}
	hosts, err := hostlist.ParseList(ts.FetchHosts)
	if err != nil {
		return refuse(RuleFetchHosts, "%v", err)
	}
	canonical := slices.Compact(slices.Sorted(slices.Values(hosts.Strings())))
	if !slices.Equal(canonical, ts.FetchHosts) {
		return refuse(RuleFetchHosts, "fetch_hosts are not in canonical form, sorted and unique")
	}
	return ts.checkHTTPHosts()
}

// checkHeader refuses a malformed name, base or workflows list
// (RuleHeader).
func (ts *Toolset) checkHeader() error {
	switch {
	case ts.Name != "" && !NamePattern.MatchString(ts.Name):
		return refuse(ts.ID, RuleHeader, "the name %.60q does not match %s", ts.Name, NamePattern)
	case ts.Base != "" && !tool.ToolsetIDPattern.MatchString(ts.Base):
		return refuse(ts.ID, RuleHeader, "the base %.60q is not a toolset id", ts.Base)
	case ts.Base == ts.ID && ts.Base != "":
		return refuse(ts.ID, RuleHeader, "the toolset is its own base")
	case ts.OnSchemaChange != "" && ts.OnSchemaChange != OnSchemaChangeAllowAdditiveInput:
		// The default, park, is pinned as "": one toolset, one id.
		return refuse(ts.ID, RuleHeader, "on_schema_change %.60q is not %s (park is written by leaving it out)", ts.OnSchemaChange, OnSchemaChangeAllowAdditiveInput)
	}
	for i, w := range ts.Workflows {
		if !NamePattern.MatchString(w) {
			return refuse(ts.ID, RuleHeader, "workflow %.60q is not a Solution name (%s)", w, NamePattern)
		}
		if i > 0 && ts.Workflows[i-1] >= w {
			return refuse(ts.ID, RuleHeader, "workflows are not sorted and unique")
		}
	}
	return nil
}

// checkPlatform is the registration check of one platform tool (a tool
// the catalog does not know): a tool name, a function placeholder or
// Lambda ARN, a timeout of 1..900 seconds, a known policy, a retry within
// the tool contract; at_least_once (a call whose outcome is unknown runs
// again) for a tool that does not honour idempotency keys only with
// tolerate_duplicates (RulePolicy), and more than one attempt of such a
// tool likewise (RuleRetry): docs/design.md, "The tool contract".
func checkPlatform(id, name string, t *Tool) error {
	refuse := func(rule, format string, a ...any) error { return refuse(id, rule, format, a...) }
	switch {
	case !catalog.NamePattern.MatchString(name):
		return refuse(RulePlatformTool, "tool name %.60q does not match %s", name, catalog.NamePattern)
	case t.Function == "":
		return refuse(RulePlatformTool, "tool %s is not in the catalog and names no function, but has a platform tool's members: a platform tool names its Lambda function", name)
	case !FunctionPattern.MatchString(t.Function) && !LambdaARNPattern.MatchString(t.Function):
		return refuse(RulePlatformTool, "tool %s: function %.80q is neither a placeholder ${Function<Name>} nor a Lambda function ARN", name, t.Function)
	}
	return checkPolicy(id, name, t)
}

// checkPolicy refuses a platform or MCP tool's timeout, policy or retry
// that breaks the tool contract: at_least_once or a retry of a tool that
// does not honour idempotency keys needs tolerate_duplicates.
func checkPolicy(id, name string, t *Tool) error {
	refuse := func(rule, format string, a ...any) error { return refuse(id, rule, format, a...) }
	switch {
	case t.TimeoutSeconds < 1 || t.TimeoutSeconds > catalog.MaxFunctionTimeout:
		return refuse(RulePlatformTool, "tool %s: timeout_seconds %d is outside 1..%d (Lambda's longest function timeout)", name, t.TimeoutSeconds, catalog.MaxFunctionTimeout)
	case t.Policy != catalog.AtLeastOnce && t.Policy != catalog.AtMostOnce:
		return refuse(RulePlatformTool, "tool %s: policy %.40q is not at_least_once or at_most_once", name, t.Policy)
	case t.Policy == catalog.AtLeastOnce && !t.Idempotent && !t.TolerateDuplicates:
		return refuse(RulePolicy, "tool %s is at_least_once but does not honour idempotency keys, and tolerate_duplicates is not set: a call whose outcome is unknown would run again and could repeat its effect", name)
	}
	if r := t.Retry; r != nil {
		switch {
		case r.MaxAttempts < 1 || r.MaxAttempts > tool.MaxAttempts:
			return refuse(RulePlatformTool, "tool %s: retry.max_attempts %d is outside 1..%d", name, r.MaxAttempts, tool.MaxAttempts)
		case r.IntervalSeconds < 1 || r.IntervalSeconds > 99_999_999:
			return refuse(RulePlatformTool, "tool %s: retry.interval_seconds %d is outside 1..99999999", name, r.IntervalSeconds)
		case r.BackoffRate < 1 || r.BackoffRate > 1000:
			return refuse(RulePlatformTool, "tool %s: retry.backoff_rate %v is outside 1.0..1000", name, r.BackoffRate)
		case !t.Idempotent && r.MaxAttempts > 1 && !t.TolerateDuplicates:
			return refuse(RuleRetry, "tool %s does not honour idempotency keys, so retry.max_attempts %d could repeat its effect, and tolerate_duplicates is not set", name, r.MaxAttempts)
		}
	}
	return nil
}

// CheckAgainst refuses, with a *Refusal, a toolset that weakens catalog c's
// contract for a tool it admits: a tool the catalog gates must stay
// review_required (RuleReviewRequired), an at_most_once tool must stay
// at_most_once (RulePolicy), and a tool that does not honour idempotency
// keys cannot be pinned as one that does (RuleIdempotent), and a catalog
// tool never names a function (RulePlatformTool). A Solution can add a
// review, never remove one (docs/solutions.md). A tool the catalog does
// not know that has a platform tool's members must be a well-formed
// platform tool (checkPlatform); one without them is left alone, as no
// function runs it (a function runs only its own catalog tool, and the
// platform tools' proxy only a tool that names a function). Tools are
// checked in name order, so the same toolset is always refused for the
// same rule.
func (ts *Toolset) CheckAgainst(c *catalog.Catalog) error {
	refuse := func(rule, format string, a ...any) error { return refuse(ts.ID, rule, format, a...) }
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		want, ok := c.Lookup(name)
		if !ok && t.MCP != nil {
			if err := checkMCP(ts.ID, name, &t); err != nil {
				return err
			}
			continue
		}
		if ok && t.MCP != nil {
			return refuse(RuleMCPTool, "it pins the catalog tool %s as an MCP tool", name)
		}
		if !ok {
			if t.Function == "" && t.TimeoutSeconds == 0 && t.Retry == nil && !t.TolerateDuplicates {
				continue // no function runs it: a function runs only its own catalog tool
			}
			if err := checkPlatform(ts.ID, name, &t); err != nil {
				return err
			}
			continue
		}
		if t.Function != "" || t.TimeoutSeconds != 0 || t.Retry != nil || t.TolerateDuplicates {
			return refuse(RulePlatformTool, "it pins the catalog tool %s with function, timeout_seconds, retry or tolerate_duplicates, which only a platform tool has", name)
		}
		switch {
		case want.ReviewRequired && !t.ReviewRequired:
			return refuse(RuleReviewRequired, "it pins %s without review_required, which the catalog requires", name)
		case want.Policy == catalog.AtMostOnce && t.Policy != catalog.AtMostOnce:
			return refuse(RulePolicy, "it pins %s as %s; the catalog says at_most_once", name, t.Policy)
		case !want.Idempotent && t.Idempotent:
			return refuse(RuleIdempotent, "it pins %s as idempotent; the catalog says it does not honour idempotency keys", name)
		}
	}
	return nil
}

// sameMCP reports whether two MCP pins are the same (both nil included),
// their auth included: a derived toolset keeps its base's declarations.
func sameMCP(a, b *MCP) bool {
	if a == nil || b == nil {
		return a == b
	}
	sameAnnotations := len(a.Annotations) == 0 && len(b.Annotations) == 0 || sameJSON(a.Annotations, b.Annotations)
	return a.Server == b.Server && a.URL == b.URL && a.Name == b.Name && a.Protocol == b.Protocol && sameAnnotations && sameAuth(a.Auth, b.Auth)
}

// RuleBase: a derived toolset is not its base's tools, or weakens one of
// their policies.
const RuleBase = "toolset-base"

// CheckDerived refuses, with a *Refusal for RuleBase, a toolset derived
// from base (ts.Base is base.ID) that adds or drops a tool, changes a
// tool's function, schemas, idempotency, timeout, retry or MCP pin (its
// auth included), makes a review
// requirement or a policy weaker, or widens the hosts: a fetch host or an
// http host its base does not have, or an http host entry with a method
// or header its base's entry lacks, an idempotency its base's entry
// does not declare, or other auth (NarrowsHTTPHost). Its workflows are
// its own (docs/design.md, "Toolsets": same tools, other workflows).
func (ts *Toolset) CheckDerived(base *Toolset) error {
	refuse := func(format string, a ...any) error { return refuse(ts.ID, RuleBase, format, a...) }
	if ts.Base != base.ID {
		return refuse("its base is %s, not %s", excerpt.Bytes(ts.Base, 40, "..."), base.ID)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(ts.Tools)), slices.Sorted(maps.Keys(base.Tools))) {
		return refuse("it does not have exactly the tools of its base %s", base.ID)
	}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t, b := ts.Tools[name], base.Tools[name]
		same := t.Description == b.Description && sameJSON(t.InputSchema, b.InputSchema) && sameJSON(t.OutputSchema, b.OutputSchema) &&
			t.Idempotent == b.Idempotent && t.Function == b.Function && t.TimeoutSeconds == b.TimeoutSeconds &&
			t.TolerateDuplicates == b.TolerateDuplicates && (t.Retry == nil) == (b.Retry == nil) && (t.Retry == nil || *t.Retry == *b.Retry) &&
			sameMCP(t.MCP, b.MCP)
		switch {
		case !same:
			return refuse("tool %s differs from its base's in more than its policy or review requirement", name)
		case b.ReviewRequired && !t.ReviewRequired:
			return refuse("tool %s drops its base's review requirement", name)
		case b.Policy == catalog.AtMostOnce && t.Policy != catalog.AtMostOnce:
			return refuse("tool %s is %s; its base says at_most_once", name, t.Policy)
		}
	}
	for _, h := range ts.FetchHosts {
		if !slices.Contains(base.FetchHosts, h) {
			return refuse("fetch host %s is not one of its base's", h)
		}
	}
	if err := checkDerivedHTTPHosts(ts.HTTPHosts, base.HTTPHosts); err != nil {
		return refuse("%v: a derived toolset may narrow http_hosts, never widen them", err)
	}
	return nil
}

// sameJSON reports whether two JSON documents have one RFC 8785 form.
func sameJSON(a, b json.RawMessage) bool {
	ca, errA := jcs.Transform(a)
	cb, errB := jcs.Transform(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}
