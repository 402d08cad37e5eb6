package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/toolgate/toolgate/shared/addrrule"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// FileResolver answers look-ups of the host names a file lists and sends
// every other name to the system resolver. The file holds ParseResolve
// specs, one a line ("HOST=IP[,IP]..."; blank lines and lines starting
// with # are skipped), and is read again at every look-up, so that its
// answers may change while a function runs: the local stack's stand-in
// for a name whose DNS answer changes between an MCP server's
// registration and a call (TOOLGATE_MCP_RESOLVE_FILE, shared/mcptool).
// Nothing deployed sets it.
type FileResolver struct {
	// Path is the file's path.
	Path string
}

// Load reads and parses the file; an error names the file and, for a bad
// spec, its line.
func (f FileResolver) Load() (FixedResolver, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("resolve file: %w", err)
	}
	out := FixedResolver{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		one, err := ParseResolve([]string{line})
		if err != nil {
			return nil, fmt.Errorf("resolve file %s:%d: %w", f.Path, i+1, err)
		}
		for h, addrs := range one {
			out[h] = append(out[h], addrs...)
		}
	}
	return out, nil
}

// LookupNetIP answers from the file when it lists host, and from the
// system resolver otherwise. A file that cannot be read or parsed fails
// the look-up (a look-up failure, never an answer).
func (f FileResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	table, err := f.Load()
	if err != nil {
		return nil, &net.DNSError{Err: err.Error(), Name: host}
	}
	if h, err := hostlist.NormalizeHost(host); err == nil {
		if _, ok := table[h]; ok {
			return table.LookupNetIP(ctx, network, host)
		}
	}
	return addrrule.System.LookupNetIP(ctx, network, host)
}
