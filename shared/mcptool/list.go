package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// MaxPages bounds the tools/list pages of one listing.
const MaxPages = 100

// ListError is List's error. Message says why, safe to show: any text of
// the server's is cut and cleaned. Code is what the same failure is before
// a call (Check).
type ListError struct {
	Code    tool.Code
	Message string
}

func (e *ListError) Error() string { return e.Message }

// List lists the tools of the MCP server at url, following every page,
// and says which protocol revision was negotiated: a toolset.Lister
// (c.List) for registration. Each tool is as the server listed it: its
// exact name and description, its inputSchema, outputSchema (nil when it
// lists none) and annotations (nil when none) as JSON. Schemas pass through
// the SDK's decoding, so their numbers are IEEE 754 doubles.
//
// An error is a *ListError: the URL or an answer's address refused, a
// server that cannot be reached or needs credentials (HTTP 401, 403),
// more than MaxPages pages, a page whose result has a nextCursor member
// that is empty (or null: no cursor, yet not the end), tool definitions
// over Config.MaxBytes in all
// (names, descriptions, schemas and annotations, all pages together), and a server listing tools the SDK drops as
// invalid (named in the error and logged): nothing of such a listing may
// be registered.
func (c *Client) List(ctx context.Context, url string) (toolset.Listed, error) {
	return c.ListWithCredential(ctx, url, nil)
}

// ListWithCredential is List presenting cred (nil: none) on every request
// of the listing, as a call presents its own (connect): for registration
// of a toolset whose server declares auth, with the toolset scope's
// credential (docs/credentials.md, "Storing"). A url with a "{secret}"
// path segment is listed only with a credential whose declaration names
// it. Every message is redacted of cred's secret; a server that refuses
// it with HTTP 401 error="invalid_token" is a *ListError of code
// CALL_PARKED whose message starts with credential.CauseExpired.
func (c *Client) ListWithCredential(ctx context.Context, url string, cred *credential.Credential) (toolset.Listed, error) {
	l, te := c.list(ctx, url, cred)
	if te == nil && len(l.dropped) > 0 {
		c.log.WarnContext(ctx, "MCP server lists tools the SDK drops as invalid", "url", url, "tools", l.dropped)
		te = tool.Errorf(tool.PermanentFailure, "the MCP server at %s lists %d tool(s) that the MCP Go SDK drops as invalid (a null tool, or invalid x-mcp-header annotations): %s; nothing is registered",
			l.host, len(l.dropped), strings.Join(l.dropped, ", "))
	}
	if te = cred.RedactError(te); te != nil {
		return toolset.Listed{}, &ListError{Code: te.Code, Message: te.Message}
	}
	return l.Listed, nil
}

// listing is one listing of a server's tools.
type listing struct {
	toolset.Listed
	host string
	// dropped names the tools the SDK dropped as invalid, cut and quoted
	// ("null" for a null tool).
	dropped []string
}

// list runs one listing in a new session with cred (nil: none), bounded
// by Config.Timeout; its errors are redacted of cred's secret. A listing
// that quotes cred's secret anywhere (a tool's name, description, schemas,
// annotations, or a dropped tool's name, in any form credential.Redact
// finds) is refused whole, TOOL_PERMANENT_FAILURE, naming no part of it:
// nothing of it may be pinned, shown or compared, since a comparison's
// message would quote the server's text (docs/credentials.md).
func (c *Client) list(ctx context.Context, url string, cred *credential.Credential) (*listing, *tool.Error) {
	l, te := c.listOnce(ctx, url, cred)
	if te == nil && cred != nil && quotes(l, cred) {
		return nil, tool.Errorf(tool.PermanentFailure, "tools/list of %s: the server's tool list quotes %s; nothing of it is used", l.host, cred.Name())
	}
	return l, cred.RedactError(te)
}

// quotes reports whether l holds cred's secret in any form Redact finds.
func quotes(l *listing, cred *credential.Credential) bool {
	b, err := json.Marshal(l.Listed)
	if err != nil {
		return true
	}
	text := string(b) + "\n" + strings.Join(l.dropped, "\n")
	return cred.Redact(text) != text
}

func (c *Client) listOnce(ctx context.Context, url string, cred *credential.Credential) (*listing, *tool.Error) {
	op, cancel := context.WithTimeout(ctx, c.cfg.timeout())
	defer cancel()
	// The SDK drops tools it finds invalid from what ListTools returns; a
	// sending middleware sees each page before that.
	var (
		mu  sync.Mutex
		raw []*mcp.Tool
	)
	mw := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				mu.Lock()
				raw = slices.Clone(lr.Tools)
				mu.Unlock()
			}
			return res, err
		}
	}
	s, te := c.connect(ctx, op, url, mw, tool.TraceContext{}, cred)
	if te != nil {
		return nil, te
	}
	defer s.close()
	l := &listing{host: s.host, Listed: toolset.Listed{Protocol: s.cs.InitializeResult().ProtocolVersion}}
	a := attempt{what: "tools/list of", host: s.host, bound: c.cfg.timeout(), limit: c.cfg.maxBytes(), cred: cred}
	seen := map[string]bool{}
	cursor := ""
	size := int64(0) // the listing's tool definitions so far, in bytes
	for page := 1; ; page++ {
		p, tap := &probe{}, &pageTap{}
		mu.Lock()
		raw = nil
		mu.Unlock()
		res, err := s.cs.ListTools(withPageTap(withProbe(op, p), tap), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, failure(ctx, op, a, p.lastExchange(), err)
		}
		mu.Lock()
		page0 := raw
		mu.Unlock()
		for _, t := range page0 {
			if !slices.Contains(res.Tools, t) {
				l.dropped = append(l.dropped, toolName(t))
			}
		}
		for _, t := range res.Tools {
			lt, err := listedTool(t)
			if err != nil {
				return nil, tool.Wrap(tool.PermanentFailure, err, "tools/list of %s: tool %s cannot be encoded as JSON", s.host, toolName(t))
			}
			if size += int64(len(lt.Name) + len(lt.Description) + len(lt.InputSchema) + len(lt.OutputSchema) + len(lt.Annotations)); size > a.limit {
				return nil, tool.Errorf(tool.PermanentFailure, "tools/list of %s: the tools it lists are larger than the %d-byte read limit, which bounds a whole listing as it bounds each answer", s.host, a.limit)
			}
			l.Tools = append(l.Tools, lt)
		}
		if res.NextCursor == "" {
			// Absent ends the listing; present and empty is no cursor to
			// send, and the pages after it would go unseen.
			member, found := tap.nextCursor()
			switch {
			case !found:
				return nil, tool.Errorf(tool.PermanentFailure, "tools/list of %s: page %d's answer could not be read to tell an absent nextCursor (the last page) from an empty one", s.host, page)
			case member != nil:
				return nil, tool.Errorf(tool.PermanentFailure, "tools/list of %s: page %d gives nextCursor %s, which is neither a cursor nor absent (the last page): the tools after it cannot be listed, so nothing of the listing is used",
					s.host, page, clean(string(member), 40))
			}
			return l, nil
		}
		switch {
		case seen[res.NextCursor]:
			return nil, tool.Errorf(tool.PermanentFailure, "tools/list of %s: page %d gives a cursor an earlier page gave", s.host, page)
		case page == MaxPages:
			return nil, tool.Errorf(tool.PermanentFailure, "tools/list of %s has more than %d pages", s.host, MaxPages)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// toolName is a tool's name for a message: quoted, cut and cleaned.
func toolName(t *mcp.Tool) string {
	if t == nil {
		return "null"
	}
	return fmt.Sprintf("%q", clean(t.Name, 130))
}

// annotations is mcp.ToolAnnotations without its MarshalJSON, whose form
// an environment variable (MCPGODEBUG=hintomitempty=1) changes: pins and
// checks must not depend on it.
type annotations struct {
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	Title           string `json:"title,omitempty"`
}

// listedTool is t as a toolset.ListedTool: its schemas and annotations
// as JSON, nil when absent.
func listedTool(t *mcp.Tool) (toolset.ListedTool, error) {
	lt := toolset.ListedTool{Name: t.Name, Description: t.Description}
	var err error
	if t.InputSchema != nil {
		if lt.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
			return lt, err
		}
	}
	if t.OutputSchema != nil {
		if lt.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return lt, err
		}
	}
	if t.Annotations != nil {
		if lt.Annotations, err = json.Marshal(annotations(*t.Annotations)); err != nil {
			return lt, err
		}
	}
	return lt, nil
}
