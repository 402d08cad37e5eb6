package toolset

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/tool"
)

func mustBuild(t *testing.T, c *catalog.Catalog, names, review, hosts []string) *Toolset {
	t.Helper()
	ts, err := FromCatalog(c, names, review, hosts)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestIDIsContentAddressed(t *testing.T) {
	c := catalog.Default()
	a := mustBuild(t, c, []string{"send-email", "structured-data-fetch"}, nil, []string{"b.example", "a.example"})
	b := mustBuild(t, c, []string{"structured-data-fetch", "send-email"}, []string{"send-email"}, []string{"a.example", "b.example", "a.example"})
	if a.ID != b.ID {
		t.Fatalf("same content gave %s and %s", a.ID, b.ID)
	}
	if !tool.ToolsetIDPattern.MatchString(a.ID) {
		t.Fatalf("id %q", a.ID)
	}
	reviewed := mustBuild(t, c, []string{"structured-data-fetch", "send-email"}, []string{"structured-data-fetch"}, []string{"a.example", "b.example"})
	if reviewed.ID == a.ID {
		t.Fatal("review_required change kept the id")
	}
	fewer := mustBuild(t, c, []string{"send-email"}, nil, []string{"a.example", "b.example"})
	if fewer.ID == a.ID {
		t.Fatal("dropping a tool kept the id")
	}
}

func TestSchemaChangeChangesID(t *testing.T) {
	base := catalog.Default()
	send, _ := base.Lookup("send-email")
	doc, _ := json.Marshal(map[string]any{"tools": []any{send}})
	changed := strings.Replace(string(doc), `"maxLength":998`, `"maxLength":997`, 1)
	if changed == string(doc) {
		t.Fatal("fixture did not change the schema")
	}
	c2, err := catalog.Parse([]byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	a := mustBuild(t, base, []string{"send-email"}, nil, nil)
	b := mustBuild(t, c2, []string{"send-email"}, nil, nil)
	if a.ID == b.ID {
		t.Fatal("a schema change kept the id")
	}
	// Whitespace and key order in a schema are not content.
	respaced := strings.ReplaceAll(string(doc), `,"`, `, "`)
	c3, err := catalog.Parse([]byte(respaced))
	if err != nil {
		t.Fatal(err)
	}
	if c := mustBuild(t, c3, []string{"send-email"}, nil, nil); c.ID != a.ID {
		t.Fatal("whitespace in a schema changed the id")
	}
}

func TestParseRoundTrip(t *testing.T) {
	ts := mustBuild(t, catalog.Default(), []string{"workflow-validator"}, nil, nil)
	out, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != ts.ID {
		t.Fatalf("round trip id %s != %s", back.ID, ts.ID)
	}
	tampered := strings.Replace(string(out), `"idempotent": true`, `"idempotent": false`, 1)
	if _, err := Parse([]byte(tampered)); err == nil || !strings.Contains(err.Error(), "["+RuleDigest+"]") {
		t.Fatalf("tampered toolset: %v", err)
	}
}

func TestUnknownTool(t *testing.T) {
	if _, err := FromCatalog(catalog.Default(), []string{"send-slack-message"}, nil, nil); err == nil {
		t.Fatal("unknown tool admitted")
	}
}

func TestCheckAgainstCatalog(t *testing.T) {
	c := catalog.Default()
	ok := mustBuild(t, c, []string{"send-email", "structured-data-fetch"}, []string{"structured-data-fetch"}, nil)
	if err := ok.CheckAgainst(c); err != nil {
		t.Fatalf("a catalog toolset (with an added review): %v", err)
	}
	for name, weaken := range map[string]func(*Tool){
		"ungated":    func(t *Tool) { t.ReviewRequired = false },
		"at least":   func(t *Tool) { t.Policy = catalog.AtLeastOnce },
		"idempotent": func(t *Tool) { t.Idempotent = true },
	} {
		ts := mustBuild(t, c, []string{"send-email"}, nil, nil)
		tool := ts.Tools["send-email"]
		weaken(&tool)
		ts.Tools["send-email"] = tool
		if err := ts.CheckAgainst(c); err == nil {
			t.Errorf("%s: a weakened send-email passed", name)
		}
	}
}

// Verify is the registration check: each way a toolset can be weaker than
// the catalog, or not what it claims, is refused for its own rule, with a
// correct digest so that only the rule under test can catch it.
func TestVerifyRefusesEachRule(t *testing.T) {
	c := catalog.Default()
	ok := mustBuild(t, c, []string{"send-email", "structured-data-fetch"}, []string{"structured-data-fetch"}, []string{"api.example.com"})
	if err := ok.Verify(c); err != nil {
		t.Fatalf("a catalog toolset: %v", err)
	}
	cases := []struct {
		name   string
		modify func(ts *Toolset)
		rule   string
		keepID bool // the id is not recomputed
	}{
		{"review removed", func(ts *Toolset) {
			tool := ts.Tools["send-email"]
			tool.ReviewRequired = false
			ts.Tools["send-email"] = tool
		}, RuleReviewRequired, false},
		{"policy weakened", func(ts *Toolset) {
			tool := ts.Tools["send-email"]
			tool.Policy = catalog.AtLeastOnce
			ts.Tools["send-email"] = tool
		}, RulePolicy, false},
		{"idempotency claimed", func(ts *Toolset) {
			tool := ts.Tools["send-email"]
			tool.Idempotent = true
			ts.Tools["send-email"] = tool
		}, RuleIdempotent, false},
		{"input schema broken", func(ts *Toolset) {
			tool := ts.Tools["structured-data-fetch"]
			tool.InputSchema = json.RawMessage(`{"type":"nope"}`)
			ts.Tools["structured-data-fetch"] = tool
		}, RuleSchema, false},
		{"output schema not JSON", func(ts *Toolset) {
			tool := ts.Tools["send-email"]
			tool.OutputSchema = json.RawMessage(`{"$ref":"https://example.com/s.json"}`)
			ts.Tools["send-email"] = tool
		}, RuleSchema, false},
		{"schema references fan out", func(ts *Toolset) {
			defs := ""
			for i := range 40 {
				defs += fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
			}
			tool := ts.Tools["send-email"]
			tool.InputSchema = json.RawMessage(`{"$defs":{` + defs + `"d40":{"type":"object"}},"$ref":"#/$defs/d0"}`)
			ts.Tools["send-email"] = tool
		}, RuleSchema, false},
		{"schema nested too deep", func(ts *Toolset) {
			tool := ts.Tools["send-email"]
			tool.OutputSchema = json.RawMessage(strings.Repeat(`{"not":`, MaxSchemaDepth) + `{}` + strings.Repeat(`}`, MaxSchemaDepth))
			ts.Tools["send-email"] = tool
		}, RuleSchema, false},
		{"schema too large", func(ts *Toolset) {
			tool := ts.Tools["send-email"]
			tool.InputSchema = json.RawMessage(`{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`)
			ts.Tools["send-email"] = tool
		}, RuleSchema, false},
		{"fetch host not canonical", func(ts *Toolset) { ts.FetchHosts = []string{"API.Example.com"} }, RuleFetchHosts, false},
		{"fetch hosts unsorted", func(ts *Toolset) { ts.FetchHosts = []string{"b.example.com", "a.example.com"} }, RuleFetchHosts, false},
		{"fetch host not an entry", func(ts *Toolset) { ts.FetchHosts = []string{"http://a.example.com/"} }, RuleFetchHosts, false},
		{"fetch host a wildcard over a public suffix", func(ts *Toolset) { ts.FetchHosts = []string{"*.github.io"} }, RuleFetchHosts, false},
		{"content changed under its id", func(ts *Toolset) { ts.FetchHosts = []string{"evil.example.com"} }, RuleDigest, true},
		{"id not a toolset id", func(ts *Toolset) { ts.ID = "ts_x" }, RuleDigest, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := mustBuild(t, c, []string{"send-email", "structured-data-fetch"}, []string{"structured-data-fetch"}, []string{"api.example.com"})
			tc.modify(ts)
			if !tc.keepID {
				var err error
				if ts.ID, err = ts.ComputeID(); err != nil {
					t.Fatal(err)
				}
			}
			err := ts.Verify(c)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != tc.rule {
				t.Fatalf("Verify: %v, want a refusal for %s", err, tc.rule)
			}
			if !strings.Contains(err.Error(), "["+tc.rule+"]") {
				t.Fatalf("the message does not name the rule: %v", err)
			}
		})
	}
}

// A platform tool (one the catalog does not know, naming its function) is
// admitted, and adding a review to a tool the catalog does not gate is
// allowed.
func TestVerifyAllowsStricterToolsets(t *testing.T) {
	c := catalog.Default()
	ts := mustBuild(t, c, []string{"structured-data-fetch", "workflow-validator"}, []string{"structured-data-fetch", "workflow-validator"}, nil)
	ts.Tools["not-in-catalog"] = Tool{InputSchema: json.RawMessage(`{}`), OutputSchema: json.RawMessage(`{}`), Idempotent: true, Policy: catalog.AtLeastOnce,
		Function: "${FunctionNotInCatalog}", TimeoutSeconds: 30}
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(c); err != nil {
		t.Fatalf("a stricter toolset: %v", err)
	}
}

// Parse never panics, and a document it accepts round-trips to the same
// id; Verify of it returns nil or a *Refusal, never another error. The
// same bytes go through ParseDraft (checkDraft), and every MCP server URL
// they hold through ParseMCPURL and MCPURLShown (checkMCPURL: a
// secret-looking path segment is refused, and neither the refusal nor the
// URL as shown holds a secret-looking run of the URL).
func FuzzToolsetParse(f *testing.F) {
	ts, err := FromCatalog(catalog.Default(), []string{"send-email", "structured-data-fetch"}, nil, []string{"api.example.com"})
	if err != nil {
		f.Fatal(err)
	}
	doc, _ := ts.MarshalIndent()
	f.Add(doc)
	f.Add([]byte(`{"id":"ts_00000000000000000000000000000000","tools":{},"fetch_hosts":[]}`))
	f.Add([]byte(`{"id":"ts_x","tools":null}`))
	f.Add([]byte(`{}{}`))
	f.Add([]byte(draftDoc))
	f.Add([]byte(strings.Replace(draftDoc, "/mcp\"", "/s/"+fakeToken("zapier", 40)+"/mcp\"", 1)))
	f.Add([]byte(strings.Replace(draftDoc, "/mcp\"", "/"+fakeUUID("uuid")+"/mcp\"", 1)))
	for _, c := range mcpURLLeaks(f) {
		u, _ := json.Marshal(c.URL)
		f.Add([]byte(strings.Replace(draftDoc, `"https://mcp.crm.example.com/mcp"`, string(u), 1)))
	}
	for _, u := range []string{
		"https://mcp.example.com/s/" + fakeBase64("b64-37", 16) + "/mcp",
		"https://mcp.example.com/" + fakeJWT() + "/mcp",
		"https://mcp.example.com/s;key=" + fakeHex("hex-40", 40) + "/mcp",
		"https://mcp.example.com/%7B" + fakeUUID("uuid") + "%7D/mcp",
	} {
		f.Add([]byte(strings.Replace(draftDoc, "https://mcp.crm.example.com/mcp", u, 1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDraft(t, data)
		var urls struct {
			Tools map[string]struct {
				MCP *struct {
					URL string `json:"url"`
				} `json:"mcp"`
			} `json:"tools"`
			MCPServers map[string]struct {
				URL string `json:"url"`
			} `json:"mcp_servers"`
		}
		if json.Unmarshal(data, &urls) == nil {
			for _, tool := range urls.Tools {
				if tool.MCP != nil {
					checkMCPURL(t, tool.MCP.URL)
				}
			}
			for _, srv := range urls.MCPServers {
				checkMCPURL(t, srv.URL)
			}
		}
		ts, err := Parse(data)
		if err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("Parse error is not a *Refusal: %v", err)
			}
			return
		}
		out, err := ts.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil || back.ID != ts.ID {
			t.Fatalf("round trip: %v %v", back, err)
		}
		if err := ts.Verify(catalog.Default()); err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("Verify error is not a *Refusal: %v", err)
			}
		}
	})
}

// checkDraft holds ParseDraft to its promises on data: a refusal is a
// *Refusal, and an accepted draft has no id and is written back as the
// same draft.
func checkDraft(t *testing.T, data []byte) {
	t.Helper()
	d, err := ParseDraft(data)
	if err != nil {
		var ref *Refusal
		if !errors.As(err, &ref) {
			t.Fatalf("ParseDraft error is not a *Refusal: %v", err)
		}
		return
	}
	out, err := d.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDraft(out)
	if err != nil || back.ID != "" || len(back.MCPServers) != len(d.MCPServers) {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

// A stored body loads only when it is exactly the RFC 8785 form of a
// toolset: a body carrying an id (in any letter case), other spacing or a
// duplicate member is refused for RuleFormat under the key's id.
func TestParseStoredTakesOnlyTheCanonicalBody(t *testing.T) {
	ts := mustBuild(t, catalog.Default(), []string{"send-email"}, nil, nil)
	body, err := ts.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStored(ts.ID, body)
	if err != nil || got.ID != ts.ID || got.Verify(catalog.Default()) != nil {
		t.Fatalf("the canonical body: %v %v", got, err)
	}
	for name, stored := range map[string]string{
		"id member":         `{"id":"ts_00000000000000000000000000000000",` + string(body[1:]),
		"ID member":         `{"ID":"ts_00000000000000000000000000000000",` + string(body[1:]),
		"spacing":           " " + string(body),
		"duplicate member":  strings.Replace(string(body), `{"fetch_hosts":[],`, `{"fetch_hosts":["a.example"],"fetch_hosts":[],`, 1),
		"empty":             "",
		"trailing data":     string(body) + "{}",
		"another key order": `{"tools":` + strings.SplitN(string(body), `"tools":`, 2)[1][:len(strings.SplitN(string(body), `"tools":`, 2)[1])-1] + `,"fetch_hosts":[]}`,
	} {
		_, err := ParseStored("ts_11111111111111111111111111111111", []byte(stored))
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Rule != RuleFormat || ref.ToolsetID != "ts_11111111111111111111111111111111" {
			t.Errorf("%s: %v, want a %s refusal naming the key's id", name, err, RuleFormat)
		}
	}
}

// A refusal's reason is cut to MaxReasonBytes on a UTF-8 boundary, and an
// id that is not one to 40 bytes.
func TestRefusalIsBounded(t *testing.T) {
	r := refuse(strings.Repeat("x", 100), RuleSchema, "%s", strings.Repeat("é", 1000))
	if len(r.Reason) > MaxReasonBytes+3 || !utf8.ValidString(r.Reason) || len(r.ToolsetID) > 43 {
		t.Fatalf("reason %d bytes (valid UTF-8 %v), id %q", len(r.Reason), utf8.ValidString(r.Reason), r.ToolsetID)
	}
}

// The schema bounds count reference keywords only where they are member
// names, and take schemas at the bounds.
func TestSchemaSizeBounds(t *testing.T) {
	refs := ""
	for i := range MaxSchemaRefs {
		refs += fmt.Sprintf(`"p%d":{"$ref":"#/$defs/s","const":"$ref"},`, i)
	}
	for name, c := range map[string]struct {
		doc string
		ok  bool
	}{
		"references at the bound":   {`{"$defs":{"s":{"type":"string"}},"properties":{` + strings.TrimSuffix(refs, ",") + `}}`, true},
		"one reference more":        {`{"$defs":{"s":{"type":"string"}},"properties":{` + refs + `"x":{"$ref":"#/$defs/s"}}}`, false},
		"$ref as a value only":      {`{"enum":["$ref","$ref","$dynamicRef"],"properties":{"$ref":{"type":"string"}}}`, true},
		"depth at the bound":        {strings.Repeat(`{"not":`, MaxSchemaDepth-1) + `{}` + strings.Repeat(`}`, MaxSchemaDepth-1), true},
		"arrays count toward depth": {`{"allOf":` + strings.Repeat(`[`, MaxSchemaDepth) + strings.Repeat(`]`, MaxSchemaDepth) + `}`, false},
		"catalog-sized schema":      {`{"type":"object","properties":{"to":{"type":"array","items":{"type":"string"}}}}`, true},
	} {
		err := CheckSchemaSize(json.RawMessage(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", name, err, c.ok)
		}
	}
	for _, tool := range catalog.Default().Names() {
		e, _ := catalog.Default().Lookup(tool)
		if CheckSchemaSize(e.InputSchema) != nil || CheckSchemaSize(e.OutputSchema) != nil {
			t.Errorf("the catalog's %s schemas break the bounds", tool)
		}
	}
}

// A toolset document registers only what it shows: members in another
// letter case, or twice, are refused, so that a file cannot read as one
// toolset and register another.
func TestParseRefusesMembersItDoesNotShow(t *testing.T) {
	ts := mustBuild(t, catalog.Default(), []string{"send-email", "structured-data-fetch"}, []string{"structured-data-fetch"}, []string{"api.example.com"})
	doc, _ := ts.MarshalIndent()
	if _, err := Parse(doc); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"case variant":   strings.Replace(string(doc), `"review_required": true`, `"review_required": true, "Review_Required": false`, 1),
		"renamed member": strings.Replace(string(doc), `"fetch_hosts"`, `"Fetch_Hosts"`, 1),
		"duplicate":      strings.Replace(string(doc), `"review_required": true`, `"review_required": true, "review_required": false`, 1),
		"id twice":       strings.Replace(string(doc), `"id":`, `"Id": "ts_00000000000000000000000000000000", "id":`, 1),
	} {
		_, err := Parse([]byte(bad))
		var ref *Refusal
		if !errors.As(err, &ref) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
}

// platformToolset is a toolset with one platform tool, as a toolset file
// pins it, changed by edit before its id is computed.
func platformToolset(t *testing.T, edit func(ts *Toolset, pt *Tool)) *Toolset {
	t.Helper()
	ts := mustBuild(t, catalog.Default(), []string{"send-email"}, nil, nil)
	pt := Tool{Description: "Create a ticket.", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`),
		Idempotent: true, Policy: catalog.AtLeastOnce, Function: "${FunctionCreateTicket}", TimeoutSeconds: 30,
		Retry: &catalog.Retry{MaxAttempts: 3, IntervalSeconds: 2, BackoffRate: 2}}
	ts.Name, ts.Workflows = "support-desk", []string{"weekly-digest"}
	if edit != nil {
		edit(ts, &pt)
	}
	ts.Tools["create-ticket"] = pt
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	return ts
}

// The registration check of platform tools and of a registered toolset's
// name, base and workflows.
func TestVerifyPlatformTools(t *testing.T) {
	if err := platformToolset(t, nil).Verify(catalog.Default()); err != nil {
		t.Fatalf("a well-formed platform tool: %v", err)
	}
	arn := platformToolset(t, func(_ *Toolset, pt *Tool) {
		pt.Function = "arn:aws:lambda:eu-west-1:123456789012:function:create-ticket:live"
	})
	if err := arn.Verify(catalog.Default()); err != nil {
		t.Fatalf("a function ARN: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(ts *Toolset, pt *Tool)
		rule string
	}{
		{"timeout but no function", func(_ *Toolset, pt *Tool) { pt.Function = "" }, RulePlatformTool},
		{"function not a placeholder", func(_ *Toolset, pt *Tool) { pt.Function = "create-ticket" }, RulePlatformTool},
		{"placeholder with a dash", func(_ *Toolset, pt *Tool) { pt.Function = "${Function-x}" }, RulePlatformTool},
		{"no timeout", func(_ *Toolset, pt *Tool) { pt.TimeoutSeconds = 0 }, RulePlatformTool},
		{"timeout over Lambda's", func(_ *Toolset, pt *Tool) { pt.TimeoutSeconds = 901 }, RulePlatformTool},
		{"unknown policy", func(_ *Toolset, pt *Tool) { pt.Policy = "exactly_once" }, RulePlatformTool},
		{"eleven attempts", func(_ *Toolset, pt *Tool) { pt.Retry.MaxAttempts = 11 }, RulePlatformTool},
		{"at_least_once without idempotency", func(_ *Toolset, pt *Tool) { pt.Idempotent, pt.Retry = false, nil }, RulePolicy},
		{"retries without idempotency", func(_ *Toolset, pt *Tool) { pt.Idempotent, pt.Policy = false, catalog.AtMostOnce }, RuleRetry},
		{"schema that does not compile", func(_ *Toolset, pt *Tool) { pt.InputSchema = json.RawMessage(`{"type":"objekt"}`) }, RuleSchema},
		{"catalog tool with a function", func(ts *Toolset, _ *Tool) {
			se := ts.Tools["send-email"]
			se.Function = "${FunctionSendEmail}"
			ts.Tools["send-email"] = se
		}, RulePlatformTool},
		{"bad name", func(ts *Toolset, _ *Tool) { ts.Name = "Support_Desk" }, RuleHeader},
		{"bad base", func(ts *Toolset, _ *Tool) { ts.Base = "ts_x" }, RuleHeader},
		{"unsorted workflows", func(ts *Toolset, _ *Tool) { ts.Workflows = []string{"b", "a"} }, RuleHeader},
		{"on_schema_change park written out", func(ts *Toolset, _ *Tool) { ts.OnSchemaChange = OnSchemaChangePark }, RuleHeader},
		{"unknown on_schema_change", func(ts *Toolset, _ *Tool) { ts.OnSchemaChange = "allow_all" }, RuleHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := platformToolset(t, tc.edit).Verify(catalog.Default())
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != tc.rule {
				t.Fatalf("Verify: %v, want a refusal for %s", err, tc.rule)
			}
		})
	}
	// Tolerated duplicates admit retries, and at_least_once, of a tool
	// that ignores the key; at_most_once needs no tolerance.
	tol := platformToolset(t, func(_ *Toolset, pt *Tool) { pt.Idempotent, pt.TolerateDuplicates = false, true })
	if err := tol.Verify(catalog.Default()); err != nil {
		t.Fatalf("tolerate_duplicates: %v", err)
	}
	once := platformToolset(t, func(_ *Toolset, pt *Tool) { pt.Idempotent, pt.Policy, pt.Retry = false, catalog.AtMostOnce, nil })
	if err := once.Verify(catalog.Default()); err != nil {
		t.Fatalf("at_most_once, not idempotent: %v", err)
	}
}

// A registered toolset's stored body round-trips through ParseStored with
// its name, base, workflows, on_schema_change and platform members.
func TestParseStoredPlatform(t *testing.T) {
	ts := platformToolset(t, func(ts *Toolset, _ *Tool) {
		ts.Base, ts.OnSchemaChange = "ts_0123456789abcdef0123456789abcdef", OnSchemaChangeAllowAdditiveInput
	})
	body, err := ts.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStored(ts.ID, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	if got.Base != ts.Base || got.Tools["create-ticket"].Function != "${FunctionCreateTicket}" || len(got.Workflows) != 1 || !got.AllowsAdditiveInput() {
		t.Fatalf("lost members: %+v", got)
	}
}
