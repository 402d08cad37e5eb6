package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"
)

// The MCP Go SDK decodes a tools/list result's nextCursor into a string
// with omitempty (mcp.ListToolsResult.NextCursor), so it cannot tell a
// result without the member, which ends the listing, from one with an
// empty cursor, which does not (an empty string is no cursor to send, yet
// says more pages follow). Its middleware sees only the decoded result,
// and its Connection cannot be wrapped without losing the streamable
// transport's session updates. So the recorder keeps the HTTP bodies of a
// page's requests (pageTap), and list reads the raw result from them.

// pageTap keeps what one tools/list page sent and received over HTTP:
// the JSON-RPC ids of the tools/list requests, and every answer's body as
// the SDK read it (after the read limit).
type pageTap struct {
	mu      sync.Mutex
	ids     []json.RawMessage
	answers []*tapped
}

// tapped is one HTTP answer's body, as far as it was read.
type tapped struct {
	mu          sync.Mutex
	contentType string
	body        bytes.Buffer
}

type tapKey struct{}

// withPageTap makes the recorder keep the bodies of the requests made
// under ctx, and their answers', in t.
func withPageTap(ctx context.Context, t *pageTap) context.Context {
	return context.WithValue(ctx, tapKey{}, t)
}

// request notes req's JSON-RPC id if it is a tools/list request; req's
// body is read and put back.
func (t *pageTap) request(req *http.Request) {
	if req.Method != http.MethodPost || req.Body == nil {
		return
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	var msg map[string]json.RawMessage
	var method string
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || method != "tools/list" || msg["id"] == nil {
		return
	}
	t.mu.Lock()
	t.ids = append(t.ids, compact(msg["id"]))
	t.mu.Unlock()
}

// answer keeps what is read of resp's body.
func (t *pageTap) answer(resp *http.Response) {
	a := &tapped{contentType: resp.Header.Get("Content-Type")}
	t.mu.Lock()
	t.answers = append(t.answers, a)
	t.mu.Unlock()
	resp.Body = &tappedBody{rc: resp.Body, into: a}
}

// tappedBody copies into a what is read of rc.
type tappedBody struct {
	rc   io.ReadCloser
	into *tapped
}

func (b *tappedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.into.mu.Lock()
	b.into.body.Write(p[:n])
	b.into.mu.Unlock()
	return n, err
}

func (b *tappedBody) Close() error { return b.rc.Close() }

// nextCursor returns the nextCursor member of the tools/list result the
// page received, as JSON: nil when the result has no such member. found is
// false when no answer read so far holds a result for one of the page's
// tools/list requests.
func (t *pageTap) nextCursor() (cursor json.RawMessage, found bool) {
	t.mu.Lock()
	ids, answers := t.ids, t.answers
	t.mu.Unlock()
	for _, a := range answers {
		a.mu.Lock()
		body := bytes.Clone(a.body.Bytes())
		a.mu.Unlock()
		if cursor, found = rawNextCursor(a.contentType, body, ids); found {
			return cursor, true
		}
	}
	return nil, false
}

// rawNextCursor finds, in an HTTP answer's body of the given Content-Type
// (application/json: a JSON-RPC message or a batch; text/event-stream:
// server-sent events whose data is a JSON-RPC message each), the
// response to a request whose id is one of ids, and returns its result's
// nextCursor member as JSON, nil when the result has none. Member names
// match exactly. found is false when no such response with a result is
// there.
func rawNextCursor(contentType string, body []byte, ids []json.RawMessage) (cursor json.RawMessage, found bool) {
	media, _, _ := mime.ParseMediaType(contentType)
	var messages [][]byte
	switch media {
	case "application/json":
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) == nil {
			for _, m := range batch {
				messages = append(messages, m)
			}
		} else {
			messages = [][]byte{body}
		}
	case "text/event-stream":
		messages = eventData(body)
	default:
		return nil, false
	}
	for _, m := range messages {
		var msg map[string]json.RawMessage
		if json.Unmarshal(m, &msg) != nil || msg["result"] == nil || msg["id"] == nil {
			continue
		}
		id := compact(msg["id"])
		known := false
		for _, want := range ids {
			known = known || bytes.Equal(id, want)
		}
		if !known {
			continue
		}
		var result map[string]json.RawMessage
		if json.Unmarshal(msg["result"], &result) != nil {
			continue
		}
		return result["nextCursor"], true
	}
	return nil, false
}

// eventData returns the data of each server-sent event in body (the
// HTML Living Standard's event stream format: "data:" lines joined with
// newlines, an event ended by a blank line or the end of the body).
func eventData(body []byte) [][]byte {
	var out [][]byte
	var data []byte
	has := false
	flush := func() {
		if has {
			out = append(out, data)
		}
		data, has = nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	sc.Split(scanEventLines)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			flush()
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, v...), true
		}
	}
	flush()
	return out
}

// scanEventLines splits an event stream into lines ended by CRLF, LF or
// CR.
func scanEventLines(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // a LF may follow
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// compact is raw without insignificant space, so that ids compare as
// JSON values of one spelling.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
