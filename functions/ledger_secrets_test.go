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

// The provisioning function under the RIE answers a CloudFormation Create
// with SUCCESS after creating each listed secret and the since time in
// the SSM stand-in; a second Create answers SUCCESS and changes none.
func TestLedgerSecretsCreatesOnceUnderTheRIE(t *testing.T) {
	ssm, err := local.StartSSM(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ssm.Close() })
	url, responses := cfnResponses(t)
	fn := localtest.RIE(t, "ledger-secrets", localtest.Bootstrap(t, "./ledger-secrets"), 10*time.Second, map[string]string{
		"AWS_ENDPOINT_URL_SSM": ssm.Endpoint(),
		secrets.EnvMACParam:    "", // no secrets of its own: it makes them
	})
	a, b := secrets.NamesFor("test", "send-email"), secrets.NamesFor("test", "mcp-call")
	event := func(id string) map[string]any {
		return map[string]any{"RequestType": "Create", "RequestId": id, "ResponseURL": url,
			"ResourceType": "Custom::LedgerSecrets", "LogicalResourceId": "LedgerSecrets",
			"StackId":            "arn:aws:cloudformation:us-east-1:000000000000:stack/toolgate-test/1",
			"ResourceProperties": map[string]any{"ServiceToken": "arn", secrets.PropSecrets: []string{a.MAC, b.MAC, a.ExternalKey}, secrets.PropSince: a.Since}}
	}
	values := func() map[string]string {
		out := map[string]string{}
		for _, n := range []string{a.MAC, b.MAC, a.ExternalKey, a.Since} {
			v, _, ok := ssm.Value(n)
			if !ok {
				t.Fatalf("%s was not created", n)
			}
			out[n] = v
		}
		return out
	}
	var first map[string]string
	for i, id := range []string{"first", "second"} {
		if _, errType, _ := localtest.Invoke(t, fn, event(id)); errType != "" {
			t.Fatalf("create %d: %s", i+1, errType)
		}
		select {
		case r := <-responses:
			if r["Status"] != "SUCCESS" || r["PhysicalResourceId"] != a.Since || r["RequestId"] != id {
				t.Fatalf("create %d answered %v", i+1, r)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("create %d: no response reached the ResponseURL", i+1)
		}
		if i == 0 {
			first = values()
		}
	}
	for n, v := range values() {
		if first[n] != v {
			t.Errorf("%s changed on the second Create", n)
		}
	}
	if v, typ, _ := ssm.Value(a.MAC); typ != "SecureString" || len(v) != 44 {
		t.Fatalf("%s: %s of %d characters, want a SecureString of 32 bytes base64", a.MAC, typ, len(v))
	}
	if ssm.Puts() != 8 {
		t.Fatalf("%d PutParameter requests, want 4 per Create", ssm.Puts())
	}
}
