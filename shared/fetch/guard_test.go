package fetch

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/tool"
)

func TestTransportSendsOnlyWhatDecideAllows(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://evil.example.com/x", http.StatusTemporaryRedirect)
			return
		}
		_, _ = io.WriteString(w, r.Method+" "+r.Host)
	})
	res := &fetchtest.Resolver{Answers: fetchtest.Addrs(t, "93.184.216.34")}
	cfg := upstreamConfig(up, mustList(t, "api.example.com", "evil.example.com"), res)
	cfg.AllowName = "the MCP allow-list"
	client := &http.Client{Transport: cfg.Transport(mustList(t, "api.example.com"), "the server's host")}

	t.Run("allowed, to the checked address, host normalised", func(t *testing.T) {
		resp, err := client.Post("http://API.example.com/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "POST api.example.com" {
			t.Errorf("served %q", body)
		}
		if got := up.Dialled(); !slices.Equal(got, []string{"93.184.216.34:80"}) {
			t.Errorf("dialled %v", got)
		}
	})

	tests := []struct {
		name, url, reason string
		code              tool.Code
	}{
		{"not on the platform list", "http://other.example.com/", "host other.example.com is not on the MCP allow-list", tool.PermissionDenied},
		{"not on the pinned list", "http://evil.example.com/", "host evil.example.com is not on the server's host", tool.PermissionDenied},
		{"a redirect is decided again", "http://api.example.com/moved", "host evil.example.com is not on the server's host", tool.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Get(tt.url)
			if err == nil {
				resp.Body.Close()
				t.Fatal("sent")
			}
			var r *Refusal
			if !errors.As(err, &r) || r.Decision.Code != tt.code || !strings.Contains(r.Decision.Reason, tt.reason) {
				t.Errorf("error %v, want a refusal saying %q", err, tt.reason)
			}
		})
	}

	t.Run("an answer refused", func(t *testing.T) {
		meta := &fetchtest.Resolver{Answers: fetchtest.Addrs(t, "93.184.216.34", "169.254.169.254")}
		cfg := upstreamConfig(up, mustList(t, "api.example.com"), meta)
		before := len(up.Dialled())
		_, err := (&http.Client{Transport: cfg.Transport(cfg.Allow, "pinned")}).Get("http://api.example.com/")
		var r *Refusal
		if !errors.As(err, &r) || !strings.Contains(r.Decision.Reason, "169.254.169.254") {
			t.Errorf("error %v, want a refusal naming the metadata address", err)
		}
		if len(up.Dialled()) != before {
			t.Error("dialled")
		}
	})
}
