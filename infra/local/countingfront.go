package local

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Counts are what a counting front saw since it started: requests, their
// bodies' bytes (Content-Length) and their request lines' and headers'
// bytes, in total and by operation (the X-Amz-Target header's part after
// the dot: "UpdateItem").
type Counts struct {
	Requests    int64               `json:"requests"`
	BodyBytes   int64               `json:"body_bytes"`
	HeaderBytes int64               `json:"header_bytes"`
	Ops         map[string]OpCounts `json:"ops"`
}

// OpCounts are one operation's requests and body bytes.
type OpCounts struct {
	Requests  int64 `json:"requests"`
	BodyBytes int64 `json:"body_bytes"`
}

// Less is c less an earlier reading of the same front (totals only).
func (c Counts) Less(earlier Counts) Counts {
	return Counts{Requests: c.Requests - earlier.Requests, BodyBytes: c.BodyBytes - earlier.BodyBytes, HeaderBytes: c.HeaderBytes - earlier.HeaderBytes}
}

// Plus is c and other added (totals only).
func (c Counts) Plus(other Counts) Counts {
	return Counts{Requests: c.Requests + other.Requests, BodyBytes: c.BodyBytes + other.BodyBytes, HeaderBytes: c.HeaderBytes + other.HeaderBytes}
}

// CountingFront is an HTTP proxy on a free 127.0.0.1 port in front of
// another stand-in, in a process of its own (node
// infra/local/countingfront.mjs): clients pointed at its Endpoint reach
// the stand-in unchanged, and Counts says what they sent.
type CountingFront struct{ *Process }

// StartCountingFront starts a counting front forwarding to target (an
// "http://host:port" endpoint, such as dynalite's Process.Endpoint).
func StartCountingFront(ctx context.Context, target string) (*CountingFront, error) {
	p, err := startNode(ctx, "counting front", "infra/local/countingfront.mjs", nil,
		func(port int) []string { return []string{"127.0.0.1", strconv.Itoa(port), target} })
	if err != nil {
		return nil, err
	}
	return &CountingFront{p}, nil
}

// Counts reads the front's totals (GET /__counts, which is not counted).
func (f *CountingFront) Counts(ctx context.Context) (Counts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.Endpoint()+"/__counts", nil)
	if err != nil {
		return Counts{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Counts{}, fmt.Errorf("local: read the counting front's counts: %w", err)
	}
	defer resp.Body.Close()
	var c Counts
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return Counts{}, fmt.Errorf("local: the counting front's counts: %w", err)
	}
	return c, nil
}
