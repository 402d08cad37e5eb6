package publish

import (
	"context"
	"errors"
	"testing"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The toolset-scope credential a registration lists a draft's server with
// was checked and set for one way of presenting it (here a Bearer
// header). A later draft of the same name, target and origin, registered
// by any Publisher, must not have it presented another way: in the URL's
// path, which access logs and proxies record, or in a header the server
// logs or echoes (User-Agent, X-Request-Id).
func TestDraftListingPresentsTheCredentialOnlyAsItWasSet(t *testing.T) {
	e := newCredEnv(t)
	e.h.service.MCP = func(context.Context, string) (toolset.Listed, error) {
		return toolset.Listed{}, errors.New("no server without auth here")
	}
	var presented []toolset.Auth
	e.h.service.Credentials.ListWithCredential = func(_ context.Context, u string, tg credential.Target, _ []byte) (toolset.Listed, error) {
		presented = append(presented, tg.Auth)
		return toolset.Listed{}, errors.New("listing stops here")
	}
	draft := func(url string, auth toolset.Auth) []byte {
		d := &toolset.Toolset{Name: "crm", Tools: map[string]toolset.Tool{}, FetchHosts: []string{}, MCPServers: map[string]toolset.MCPServer{
			"crm": {URL: url, Admit: []string{"lookup_customer"}, Auth: &auth},
		}}
		doc, err := d.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	bearer := toolset.Auth{Header: "Authorization", Scheme: "Bearer"}
	r := publishapi.CredentialRequest{Toolset: "crm", Target: "crm", Secret: []byte(secret), Draft: string(draft("https://mcp.example.org/mcp", bearer))}
	if _, code, msg := e.set(t, admin, r); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	for _, auth := range []toolset.Auth{{PathSegment: 1}, {Header: "User-Agent"}} {
		url := "https://mcp.example.org/mcp"
		if auth.PathSegment > 0 {
			url = "https://mcp.example.org/{secret}/mcp"
		}
		presented = nil
		_, code, msg := e.registerDraft(t, mallory, draft(url, auth))
		if code == "" {
			t.Errorf("a draft presenting the credential as %+v was registered", auth)
		}
		for _, p := range presented {
			if p != bearer {
				t.Errorf("a draft's registration presented the credential set for %+v as %+v (%s %s)", bearer, p, code, msg)
			}
		}
	}
}
