package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Principals of the credentials tests (the STS stand-in's local account).
const (
	admin   = "admin"
	alice   = "alice" // mapped to end user u1
	mallory = "mallory"
	secret  = "canary-b64token-9f2c7e"
)

func arnOf(name string) string { return "arn:aws:iam::000000000000:user/" + name }

// credEnv is toolsetEnv with credentials: the credential store on
// dynalite, sealed under local-kms's stage key, admin a credential
// admin, and http host api.example.com allowed.
type credEnv struct {
	*toolsetEnv
	kms  *localkms.Server
	logs *bytes.Buffer
}

func newCredEnv(t *testing.T) *credEnv {
	t.Helper()
	e := &credEnv{toolsetEnv: newToolsetEnv(t), kms: localkms.StartForTest(t, "test"), logs: &bytes.Buffer{}}
	s := e.h.service
	s.Log = slog.New(slog.NewJSONHandler(e.logs, nil))
	cfg, err := fetch.ParseConfig([]string{"api.example.com", "*.chat.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Deployment.HTTP = cfg
	// The platform's end-user mapping: alice may act for u1.
	endUsers, err := enduser.Parse([]byte(`[{"principal": "`+arnOf(alice)+`", "endUser": "u1"}]`), "000000000000")
	if err != nil {
		t.Fatal(err)
	}
	store := vault.NewStore(e.db, e.table, nil)
	s.Credentials = Credentials{Store: store, KMS: e.kms.Client(), Key: localkms.Alias("test"),
		Admins: []string{arnOf(admin)}, EndUsers: endUsers, EndUserKey: bytes.Repeat([]byte{7}, 32)}
	return e
}

// webhooks is testdata's webhooks toolset with auth on api.example.com
// (a bearer token), as registered: its id and document.
func webhooks(t *testing.T, origin string) (*toolset.Toolset, []byte) {
	t.Helper()
	doc, err := os.ReadFile("../../../testdata/toolsets/webhooks.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts.HTTPHosts {
		if ts.HTTPHosts[i].Host == "api.example.com" {
			ts.HTTPHosts[i].Auth = &toolset.Auth{Header: "Authorization", Scheme: "Bearer", OriginScheme: origin}
		}
	}
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	out, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	return ts, out
}

// set sends a set of r as name.
func (e *credEnv) set(t *testing.T, name string, r publishapi.CredentialRequest) (*publishapi.CredentialSetResult, string, string) {
	t.Helper()
	if r.Origin == "" && r.Draft == "" {
		// The origin the tests' toolsets give an http host entry.
		r.Origin = "https://" + r.Target
	}
	if r.Salt == nil {
		r.Salt = publishapi.NewSalt()
	}
	out, code, msg := e.direct(t, publishapi.DirectRequest{Action: publishapi.ActionCredentialsSet, Credentials: &r,
		Proof: e.callers.Proof(t, name, publishapi.CredentialSetBinding(r))})
	if code != "" {
		return nil, code, msg
	}
	var res publishapi.CredentialSetResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return &res, "", ""
}

func (e *credEnv) list(t *testing.T, name, toolsetName string) (json.RawMessage, string, string) {
	t.Helper()
	return e.direct(t, publishapi.DirectRequest{Action: publishapi.ActionCredentialsList, Credentials: &publishapi.CredentialRequest{Toolset: toolsetName},
		Proof: e.callers.Proof(t, name, publishapi.CredentialListBinding(toolsetName))})
}

func (e *credEnv) allow(t *testing.T, name, id string) (json.RawMessage, string, string) {
	t.Helper()
	return e.direct(t, publishapi.DirectRequest{Action: publishapi.ActionCredentialsAllow, Credentials: &publishapi.CredentialRequest{ToolsetID: id},
		Proof: e.callers.Proof(t, name, publishapi.CredentialAllowBinding(id))})
}

// registerWebhooks registers webhooks with auth at origin scheme.
func (e *credEnv) registerWebhooks(t *testing.T, scheme string) *toolset.Toolset {
	t.Helper()
	ts, doc := webhooks(t, scheme)
	if _, code, msg := e.register(t, "platform-team", doc); code != "" {
		t.Fatalf("register: %s %s", code, msg)
	}
	return ts
}

// noSecret fails when the canary is in what the function answered,
// logged, or stored outside a credential's ciphertext.
func (e *credEnv) noSecret(t *testing.T, answers ...string) {
	t.Helper()
	for _, a := range append(answers, e.logs.String()) {
		if strings.Contains(a, secret) {
			t.Fatalf("the secret is in %q", a)
		}
	}
	out, err := e.db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		for n, v := range it {
			if s, ok := v.(*types.AttributeValueMemberS); ok && strings.Contains(s.Value, secret) {
				t.Fatalf("attribute %s holds the secret", n)
			}
			if b, ok := v.(*types.AttributeValueMemberB); ok && bytes.Contains(b.Value, []byte(secret)) {
				t.Fatalf("attribute %s holds the secret in clear", n)
			}
		}
	}
}

// Each scope's writers (docs/credentials.md, "Who may write each scope"):
// the toolset scope by a credential admin; an end user's by a principal
// the mapping lets act for them, or an admin; a run's by anyone while it
// has not started. Anything else is refused [credentials-forbidden], and
// nothing is stored.
func TestSetCredentialAdmitsEachScopesWriters(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	run := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-test_digest:run-1"
	for _, c := range []struct {
		name    string
		who     string
		endUser string
		run     string
		code    string
	}{
		{"toolset scope by an admin", admin, "", "", ""},
		{"toolset scope by another", alice, "", "", publishapi.CodeRefused},
		{"an end user's by the mapping", alice, "u1", "", ""},
		{"an end user's by an admin", admin, "u2", "", ""},
		{"an end user's by another", mallory, "u1", "", publishapi.CodeRefused},
		{"another end user's by a mapped principal", alice, "u2", "", publishapi.CodeRefused},
		{"a run's by anyone before it starts", mallory, "", run, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", EndUser: c.endUser, Run: c.run, Secret: []byte(secret)}
			res, code, msg := e.set(t, c.who, r)
			if code != c.code {
				t.Fatalf("code %q (%s), want %q", code, msg, c.code)
			}
			if code != "" {
				if !strings.Contains(msg, "["+RuleCredentialsForbidden+"]") || !strings.Contains(msg, arnOf(c.who)) {
					t.Fatalf("message %q does not name the rule and the principal", msg)
				}
				return
			}
			// Only a credential admin's first set allows the registered id.
			if wantAllowed := map[bool]int{true: 1, false: 0}[c.who == admin && c.endUser == "" && c.run == ""]; res.SetBy != arnOf(c.who) || res.Origin != "https://api.example.com" || res.Version < 1 || len(res.Allowed) != wantAllowed {
				t.Fatalf("answer %+v, want %d allowed", res, wantAllowed)
			}
			if c.endUser != "" && (!strings.HasPrefix(res.Scope, "end_user:") || strings.Contains(res.Scope, c.endUser)) {
				t.Fatalf("scope %q: want the end user's HMAC, never the id", res.Scope)
			}
			e.noSecret(t, msg)
		})
	}
	// Only what was allowed is stored: four credentials (a credential
	// admin's listing shows every run's).
	out, code, msg := e.list(t, admin, "webhooks")
	if code != "" {
		t.Fatalf("list: %s %s", code, msg)
	}
	var l publishapi.CredentialListResult
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Credentials) != 4 {
		t.Fatalf("%d credentials stored: %+v", len(l.Credentials), l.Credentials)
	}
}

// A run's credentials are refused once its start record exists
// [credentials-run-started]: the start seals the run's scope.
func TestSetCredentialRefusesARunThatHasStarted(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	run := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-test_digest:run-2"
	if err := dynamo.NewStore(e.db, e.table).RecordStart(t.Context(), run, arnOf(alice)); err != nil {
		t.Fatal(err)
	}
	_, code, msg := e.set(t, alice, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Run: run, Secret: []byte(secret)})
	if code != publishapi.CodeRefused || !strings.Contains(msg, "["+RuleCredentialsRunStarted+"]") {
		t.Fatalf("%s %s, want %s [%s]", code, msg, publishapi.CodeRefused, RuleCredentialsRunStarted)
	}
}

// The one exception to a started run's sealed scope (docs/credentials.md,
// "Run credentials"): while a call of the run waits in a PARKED park of
// cause credentials.expired on the target in the run's scope, the run's
// verified starter sets that target's credential again, replacing the one
// they set for the run at its origin; the item records who and when.
// Nobody else may, not for another target, and not once the park is no
// longer waiting: each is refused [credentials-run-started].
func TestSetCredentialAgainWhileTheStartedRunWaitsForIt(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	parks := parkdynamo.New(e.db, e.table, nil)
	e.h.service.Credentials.Parks = parks
	run := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-test_digest:run-3"
	req := publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Run: run, Secret: []byte(secret)}
	if _, code, msg := e.set(t, alice, req); code != "" {
		t.Fatalf("the run's credential before its start: %s %s", code, msg)
	}
	if err := dynamo.NewStore(e.db, e.table).RecordStart(t.Context(), run, arnOf(alice)); err != nil {
		t.Fatal(err)
	}
	refused := func(why, who string, r publishapi.CredentialRequest) {
		t.Helper()
		if _, code, msg := e.set(t, who, r); code != publishapi.CodeRefused || !strings.Contains(msg, "["+RuleCredentialsRunStarted+"]") {
			t.Fatalf("%s: %s %s, want %s [%s]", why, code, msg, publishapi.CodeRefused, RuleCredentialsRunStarted)
		}
	}
	refused("no call waits", alice, req)
	p := &park.Park{ID: park.ID(table.Row.Key(run), table.RowSK("0000000000000000001", 1, [4]byte{})), RunID: run, Step: "notify", Seq: "1",
		IdempotencyKey: run + "/1", Tool: "http", ToolsetID: "ts_0123456789abcdef0123456789abcdef", Cause: park.CredentialsExpired,
		Target: "api.example.com", Scope: string(credential.RunScope("run-3")), TaskToken: "token"}
	if _, _, err := parks.Record(t.Context(), p, 3600); err != nil {
		t.Fatal(err)
	}
	refused("another principal", mallory, req)
	other := req
	other.Target = "api.chat.example.com"
	refused("another target", alice, other)
	res, code, msg := e.set(t, alice, req)
	if code != "" || res.Version != 2 || res.SetBy != arnOf(alice) || res.Scope != p.Scope {
		t.Fatalf("the starter while the run waits: %+v %s %s, want version 2 set by %s", res, code, msg, arnOf(alice))
	}
	if !strings.Contains(e.logs.String(), `"run_started":true`) {
		t.Errorf("the log does not record the set again after the start:\n%s", e.logs.String())
	}
	if _, err := parks.Decide(t.Context(), p.ID, park.StatusResumed, arnOf(alice), ""); err != nil {
		t.Fatal(err)
	}
	refused("the park resumed", alice, req)
}

// A secret the target's auth refuses (CR, LF, NUL; not a b64token for
// Bearer) is refused with the rule, never quoting a byte of it; a proof
// made for one secret is refused with another.
func TestSetCredentialRefusesBadSecretsWithoutQuotingThem(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	for _, bad := range []string{secret + "\r\nX-Evil: 1", secret + " spaced", secret + "\x00"} {
		_, code, msg := e.set(t, admin, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Secret: []byte(bad)})
		if code != publishapi.CodeInvalid {
			t.Fatalf("%q: %s %s, want %s", bad, code, msg, publishapi.CodeInvalid)
		}
		e.noSecret(t, msg)
	}
	r := publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Origin: "https://api.example.com", Secret: []byte(secret), Salt: publishapi.NewSalt()}
	proof := e.callers.Proof(t, admin, publishapi.CredentialSetBinding(r))
	r.Secret = []byte(secret + "-other")
	_, code, msg := e.direct(t, publishapi.DirectRequest{Action: publishapi.ActionCredentialsSet, Credentials: &r, Proof: proof})
	if code != publishapi.CodeUnauthenticated {
		t.Fatalf("a proof for another secret: %s %s, want %s", code, msg, publishapi.CodeUnauthenticated)
	}
}

// A listing is metadata only: no ciphertext, data key, nonce or secret;
// and it shows the registered toolset ids and whether they are allowed.
func TestListCredentialsShowsNoCiphertext(t *testing.T) {
	e := newCredEnv(t)
	ts := e.registerWebhooks(t, "")
	if _, code, msg := e.set(t, admin, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Secret: []byte(secret),
		ExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	out, code, msg := e.list(t, mallory, "webhooks")
	if code != "" {
		t.Fatalf("list: %s %s", code, msg)
	}
	for _, word := range []string{`"ct"`, `"edk"`, `"nonce"`, `"ciphertext"`, `"secret"`} {
		if bytes.Contains(out, []byte(word)) {
			t.Fatalf("the listing holds %s: %s", word, out)
		}
	}
	var l publishapi.CredentialListResult
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Credentials) != 1 || l.Credentials[0].Scope != "toolset" || l.Credentials[0].ExpiresAt == "" || l.Credentials[0].SetBy != arnOf(admin) {
		t.Fatalf("credentials %+v", l.Credentials)
	}
	if len(l.Toolsets) != 1 || l.Toolsets[0].ToolsetID != ts.ID || l.Toolsets[0].AllowedBy != arnOf(admin) {
		t.Fatalf("toolsets %+v", l.Toolsets)
	}
	e.noSecret(t, string(out))
}

// A run's credential, whose scope names an execution not yet started, is
// listed to its setter and to credential admins; anyone else gets only
// its count.
func TestListCredentialsShowsARunsCredentialToItsSetterAndAdminsOnly(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	run := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-test_digest:run-listed"
	if _, code, msg := e.set(t, alice, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Run: run, Secret: []byte(secret)}); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	for _, tc := range []struct {
		who          string
		shown, count int
	}{{alice, 1, 0}, {admin, 1, 0}, {mallory, 0, 1}} {
		out, code, msg := e.list(t, tc.who, "webhooks")
		if code != "" {
			t.Fatalf("list by %s: %s %s", tc.who, code, msg)
		}
		var l publishapi.CredentialListResult
		if err := json.Unmarshal(out, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Credentials) != tc.shown || l.HiddenRuns != tc.count {
			t.Errorf("list by %s: %d shown, %d hidden, want %d and %d", tc.who, len(l.Credentials), l.HiddenRuns, tc.shown, tc.count)
		}
		if tc.shown == 0 && bytes.Contains(out, []byte("run-listed")) {
			t.Errorf("list by %s names the run: %s", tc.who, out)
		}
	}
}

// A toolset registered after a set is not allowed until a credential
// admin allows it; anyone else's allow is refused [credentials-forbidden].
func TestAllowCredentialsByAnAdminOnly(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	if _, code, msg := e.set(t, admin, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Secret: []byte(secret)}); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	later := e.registerWebhooks(t, "http") // another origin: http://api.example.com
	allowed := func() map[string]string {
		out, code, msg := e.list(t, admin, "webhooks")
		if code != "" {
			t.Fatalf("list: %s %s", code, msg)
		}
		var l publishapi.CredentialListResult
		if err := json.Unmarshal(out, &l); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, x := range l.Toolsets {
			m[x.ToolsetID] = x.AllowedBy
		}
		return m
	}
	if by := allowed()[later.ID]; by != "" {
		t.Fatalf("a toolset registered after the set is allowed by %s", by)
	}
	if _, code, msg := e.allow(t, alice, later.ID); code != publishapi.CodeRefused || !strings.Contains(msg, "["+RuleCredentialsForbidden+"]") {
		t.Fatalf("alice's allow: %s %s, want [%s]", code, msg, RuleCredentialsForbidden)
	}
	if _, code, msg := e.allow(t, admin, later.ID); code != "" {
		t.Fatalf("admin's allow: %s %s", code, msg)
	}
	if by := allowed()[later.ID]; by != arnOf(admin) {
		t.Fatalf("allowed by %q, want %s", by, arnOf(admin))
	}
}

// Revoke deletes the scope's credential, by who may set it; another
// principal is refused and the credential stays.
func TestRevokeCredential(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	if _, code, msg := e.set(t, alice, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", EndUser: "u1", Secret: []byte(secret)}); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	revoke := func(who string) (publishapi.CredentialRevokeResult, string, string) {
		r := publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", EndUser: "u1"}
		out, code, msg := e.direct(t, publishapi.DirectRequest{Action: publishapi.ActionCredentialsRevoke, Credentials: &r,
			Proof: e.callers.Proof(t, who, publishapi.CredentialRevokeBinding(r))})
		var res publishapi.CredentialRevokeResult
		if code == "" {
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
		}
		return res, code, msg
	}
	if _, code, msg := revoke(mallory); code != publishapi.CodeRefused || !strings.Contains(msg, "["+RuleCredentialsForbidden+"]") {
		t.Fatalf("mallory: %s %s", code, msg)
	}
	if res, code, msg := revoke(alice); code != "" || !res.Revoked {
		t.Fatalf("alice: %+v %s %s", res, code, msg)
	}
	if res, code, msg := revoke(alice); code != "" || res.Revoked {
		t.Fatalf("again: %+v %s %s, want nothing revoked", res, code, msg)
	}
}

// A draft whose MCP server declares auth: its toolset-scope credential can
// be set before any toolset of the name is registered, with the draft
// giving the origin; registration then lists the server only through a
// deployment that can present it, and otherwise refuses the draft saying
// so, registering nothing.
func TestDraftWithAuthNeedsItsCredentialToBeListed(t *testing.T) {
	e := newCredEnv(t)
	e.h.service.MCP = func(context.Context, string) (toolset.Listed, error) {
		t.Fatal("a server that declares auth was listed without its credential")
		return toolset.Listed{}, nil
	}
	d := &toolset.Toolset{Name: "crm", Tools: map[string]toolset.Tool{}, FetchHosts: []string{}, MCPServers: map[string]toolset.MCPServer{
		"crm": {URL: "https://mcp.example.org/mcp", Admit: []string{"lookup_customer"}, Auth: &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}},
	}}
	doc, err := d.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	r := publishapi.CredentialRequest{Toolset: "crm", Target: "crm", Secret: []byte(secret)}
	if _, code, msg := e.set(t, admin, r); code != publishapi.CodeNotFound || !strings.Contains(msg, "--draft") {
		t.Fatalf("without the draft: %s %s, want %s saying --draft", code, msg, publishapi.CodeNotFound)
	}
	r.Draft = string(doc)
	res, code, msg := e.set(t, admin, r)
	if code != "" || res.Origin != "https://mcp.example.org" || len(res.Allowed) != 0 {
		t.Fatalf("with the draft: %+v %s %s", res, code, msg)
	}
	_, code, msg = e.registerDraft(t, "platform-team", doc)
	if code != publishapi.CodeRefused || !strings.Contains(msg, "cannot list a server with its credential") || e.toolsetItems(t) != 0 {
		t.Fatalf("register: %s %s, want refused, nothing registered", code, msg)
	}
	e.noSecret(t, msg)
}
