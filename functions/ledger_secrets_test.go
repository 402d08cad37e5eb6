package functions_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/secrets"
)

// cfnResponses is a 127.0.0.1 server standing for CloudFormation's
// pre-signed ResponseURL: it hands every response body to the test.
func cfnResponses(t *testing.T) (string, <-chan map[string]any) {
	t.Helper()
	got := make(chan map[string]any, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var v map[string]any
		if r.Method != http.MethodPut || json.Unmarshal(b, &v) != nil {
			v = map[string]any{"Status": "not a PUT of JSON"}
		}
		got <- v
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/response", got
}

// The provisioning function under the RIE answers CloudFormation as the
// deploy invokes it: the secrets' resource's Create (before the tool
// functions) creates each listed secret in the SSM stand-in and no since
// time; the since resource's Create (after every tool function's new code
// is live), which names only the since parameter, writes the since time
// and nothing else; a second Create of each answers SUCCESS and changes
// none.
func TestLedgerSecretsCreatesOnceUnderTheRIE(t *testing.T) {
	ssm, err := local.StartSSM(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ssm.Close() })
	url, responses := cfnResponses(t)
	fn := localtest.RIE(t, "ledger-secrets", localtest.Bootstrap(t, "./ledger-secrets"), 10*time.Second, map[string]string{
		"AWS_ENDPOINT_URL_SSM":     ssm.Endpoint(),
		functionconfig.EnvMACParam: "", // no secrets of its own: it makes them
	})
	a, b := functionconfig.SecretNamesFor("test", "send-email"), functionconfig.SecretNamesFor("test", "mcp-call")
	event := func(id, typ, logical string, props map[string]any) map[string]any {
		props["ServiceToken"] = "arn"
		return map[string]any{"RequestType": "Create", "RequestId": id, "ResponseURL": url,
			"ResourceType": typ, "LogicalResourceId": logical,
			"StackId":            "arn:aws:cloudformation:us-east-1:000000000000:stack/toolgate-test/1",
			"ResourceProperties": props}
	}
	create := func(what string, e map[string]any, wantID string) {
		t.Helper()
		if _, errType, _ := localtest.Invoke(t, fn, e); errType != "" {
			t.Fatalf("%s: %s", what, errType)
		}
		select {
		case r := <-responses:
			if r["Status"] != "SUCCESS" || r["PhysicalResourceId"] != wantID || r["RequestId"] != e["RequestId"] {
				t.Fatalf("%s answered %v", what, r)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no response reached the ResponseURL", what)
		}
	}
	values := func(names ...string) map[string]string {
		out := map[string]string{}
		for _, n := range names {
			v, _, ok := ssm.Value(n)
			if !ok {
				t.Fatalf("%s was not created", n)
			}
			out[n] = v
		}
		return out
	}
	secretsEvent := func(id string) map[string]any {
		return event(id, "Custom::LedgerSecrets", "LedgerSecrets", map[string]any{secrets.PropSecrets: []string{a.MAC, b.MAC, a.ExternalKey}})
	}
	sinceEvent := func(id string) map[string]any {
		return event(id, "Custom::LedgerSince", "LedgerSince", map[string]any{secrets.PropSince: a.Since})
	}
	create("secrets create 1", secretsEvent("secrets-1"), functionconfig.SecretsPrefix("test"))
	first := values(a.MAC, b.MAC, a.ExternalKey)
	if _, _, ok := ssm.Value(a.Since); ok {
		t.Fatal("the secrets' resource wrote the since time, before the functions it must wait for")
	}
	if ssm.Puts() != 3 {
		t.Fatalf("%d PutParameter requests for the secrets' resource, want 3", ssm.Puts())
	}
	before := time.Now().UTC()
	create("since create 1", sinceEvent("since-1"), a.Since)
	after := time.Now().UTC()
	if ssm.Puts() != 4 {
		t.Fatalf("%d PutParameter requests after the since resource, want 4: it writes the since time only", ssm.Puts())
	}
	since := values(a.Since)[a.Since]
	if at, err := time.Parse(time.RFC3339Nano, since); err != nil || at.Before(before) || at.After(after) {
		t.Fatalf("since = %q, want the since resource's request time, between %v and %v", since, before, after)
	}
	create("secrets create 2", secretsEvent("secrets-2"), functionconfig.SecretsPrefix("test"))
	create("since create 2", sinceEvent("since-2"), a.Since)
	for n, v := range values(a.MAC, b.MAC, a.ExternalKey) {
		if first[n] != v {
			t.Errorf("%s changed on the second Create", n)
		}
	}
	if values(a.Since)[a.Since] != since {
		t.Error("the since time changed on the second Create")
	}
	if v, typ, _ := ssm.Value(a.MAC); typ != "SecureString" || len(v) != 44 {
		t.Fatalf("%s: %s of %d characters, want a SecureString of 32 bytes base64", a.MAC, typ, len(v))
	}
	if v, typ, _ := ssm.Value(a.Since); typ != "String" || v != since {
		t.Fatalf("%s: %s, want a String", a.Since, typ)
	}
}
