package fetch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A FileResolver reads its file at every look-up: a changed answer is the
// next look-up's, and a name the file does not list goes to the system
// resolver.
func TestFileResolver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolve")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := FileResolver{Path: path}
	lookup := func(host string) ([]string, error) {
		addrs, err := r.LookupNetIP(context.Background(), "ip", host)
		var out []string
		for _, a := range addrs {
			out = append(out, a.String())
		}
		return out, err
	}

	write("# the local stack's names\n\nmcp.internal.test=127.0.0.1\n")
	if got, err := lookup("MCP.internal.test."); err != nil || !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Fatalf("first answer %v, %v", got, err)
	}
	write("mcp.internal.test=169.254.169.254,10.0.0.1\n")
	if got, err := lookup("mcp.internal.test"); err != nil || !slices.Equal(got, []string{"169.254.169.254", "10.0.0.1"}) {
		t.Fatalf("changed answer %v, %v", got, err)
	}
	// A name it does not list: the system resolver (/etc/hosts for localhost).
	if got, err := lookup("localhost"); err == nil && slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "::ffff:") }) {
		t.Fatalf("localhost from the system resolver: %v", got)
	}

	write("mcp.internal.test=127.0.0.1\nnot a spec\n")
	if _, err := r.Load(); err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("a bad line: %v", err)
	}
	if _, err := lookup("mcp.internal.test"); err == nil {
		t.Fatal("a look-up answered from a file that does not parse")
	}
	if _, err := (FileResolver{Path: filepath.Join(t.TempDir(), "missing")}).Load(); err == nil {
		t.Fatal("a missing file loaded")
	}
	var _ Resolver = r
}
