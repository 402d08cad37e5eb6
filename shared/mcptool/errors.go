package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/tool"
)

// MaxServerText bounds the server's own text (an isError result's text, a
// JSON-RPC error message, a transport error) in a message, in bytes.
const MaxServerText = 200

// clean makes text from a server, or an SDK error holding it, safe to show:
// control and format characters and invalid UTF-8 become spaces, runs of
// spaces one, and it is cut to at most n bytes at a character boundary,
// with "…" when cut.
func clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	return excerpt.Bytes(strings.Join(strings.Fields(s), " "), n, "…")
}

// cause keeps an error for logs, cleaned and cut as a message would be: an
// SDK error may hold the server's text. cred's secret is taken out before
// the cut, which could otherwise leave a part of it that Redact no longer
// recognises (nil cred: none).
func cause(err error, cred *credential.Credential) error {
	if err == nil {
		return nil
	}
	return errors.New(clean(cred.Redact(err.Error()), 4*MaxServerText))
}

// codeRejected is the SDK's jsonrpc2.ErrRejected, "rejected by transport":
// an HTTP failure it wraps as a JSON-RPC error (no exported constant).
const codeRejected = -32005

// rpcError returns the first JSON-RPC error in err's tree that the server
// sent: one other than the SDK's own "rejected by transport".
func rpcError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error) bool
	walk = func(e error) bool {
		if e == nil {
			return false
		}
		if je, ok := e.(*jsonrpc.Error); ok && je != nil && je.Code != codeRejected {
			found = je
			return true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			return walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	walk(err)
	return found
}

// attempt is what failed, for failure's messages and mapping.
type attempt struct {
	// what names the operation in a message: "tools/list of", "the
	// handshake with", "tools/call of create_ticket on".
	what string
	// host is the server's host (and port, when written).
	host string
	// call: the request was a tools/call, which a server that got it may
	// have applied.
	call bool
	// bound is the operation's own time bound (Config.Timeout), 0 when the
	// caller's deadline is its only one.
	bound time.Duration
	// limit is the read limit of a response body (Config.MaxBytes).
	limit int64
	// cred is the credential the session presented (nil: none).
	cred *credential.Credential
}

// failure maps a failed exchange with a server to a *tool.Error (the table
// in the package documentation). parent is the caller's context and op the
// operation's (parent with a.bound); x is the exchange the failure is
// about; err is the SDK's error. Only a tools/call can be maybe applied,
// and only once the request was written and the server did not refuse it
// by its status.
func failure(parent, op context.Context, a attempt, x exchange, err error) *tool.Error {
	applied := a.call && x.wrote
	te := func(code tool.Code, maybe bool, format string, args ...any) *tool.Error {
		return &tool.Error{Code: code, Message: fmt.Sprintf(format, args...), MaybeApplied: maybe, Err: cause(err, a.cred)}
	}
	status := fmt.Sprintf("HTTP %d %s", x.status, http.StatusText(x.status))
	switch {
	case x.refused != nil:
		d := x.refused.Decision
		return &tool.Error{Code: d.Code, Message: fmt.Sprintf("%s %s was refused: %s", a.what, a.host, d.Reason)}
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return te(tool.Timeout, applied, "%s %s did not finish within the call's deadline", a.what, a.host)
	case parent.Err() != nil:
		return te(tool.UpstreamUnavailable, applied, "%s %s was cancelled", a.what, a.host)
	case op.Err() != nil:
		return te(tool.UpstreamUnavailable, applied, "%s %s did not finish within %s", a.what, a.host, a.bound)
	case x.tooLarge && a.call:
		return te(tool.OutputInvalid, applied, "the answer to %s %s is larger than the %d-byte read limit", a.what, a.host, a.limit)
	case x.tooLarge:
		return te(tool.PermanentFailure, false, "the answer to %s %s is larger than the %d-byte read limit", a.what, a.host, a.limit)
	case x.status == http.StatusUnauthorized && a.cred != nil && credential.InvalidToken(x.challenges):
		// RFC 6750 §3.1: the token is expired, revoked or malformed, and
		// the server did nothing with the request.
		e := a.cred.Refused()
		e.Message += fmt.Sprintf(" (%s %s was answered %s); set a new one with toolgate credentials set (docs/credentials.md)", a.what, a.host, status)
		e.Err = cause(err, a.cred)
		return e
	case (x.status == http.StatusUnauthorized || x.status == http.StatusForbidden) && a.cred != nil:
		return te(tool.PermissionDenied, false, "%s %s was answered %s: the server refused %s", a.what, a.host, status, a.cred.Name())
	case x.status == http.StatusUnauthorized || x.status == http.StatusForbidden:
		if a.call {
			return te(tool.PermissionDenied, false, "%s %s was answered %s: the server needs credentials; declare them with auth on the server in the toolset and set them with toolgate credentials set (docs/credentials.md)", a.what, a.host, status)
		}
		return te(tool.PermissionDenied, false, "%s %s was answered %s: the server needs credentials even to list its tools; declare them with auth on the server in the toolset and set them with toolgate credentials set (docs/credentials.md)", a.what, a.host, status)
	case x.status == http.StatusTooManyRequests:
		e := te(tool.RateLimited, false, "%s %s was answered %s", a.what, a.host, status)
		e.RetryAfter = fetch.RetryAfter(x.retryAfter, time.Now())
		return e
	case x.status >= 500:
		e := te(tool.UpstreamUnavailable, applied, "%s %s was answered %s", a.what, a.host, status)
		e.RetryAfter = fetch.RetryAfter(x.retryAfter, time.Now())
		return e
	case x.status >= 300 && x.status < 400:
		return te(tool.PermanentFailure, false, "%s %s was answered %s: toolgate follows no redirect of an MCP server; pin the URL it redirects to", a.what, a.host, status)
	case x.status == http.StatusNotFound && errors.Is(err, mcp.ErrSessionMissing):
		return te(tool.UpstreamUnavailable, false, "%s %s was answered %s: the server lost the session", a.what, a.host, status)
	}
	if je := rpcError(err); je != nil {
		text := clean(a.cred.Redact(je.Message), MaxServerText)
		switch je.Code {
		case jsonrpc.CodeInvalidParams:
			if a.call {
				return te(tool.InputInvalid, false, "%s %s was refused as invalid params (JSON-RPC %d): %s", a.what, a.host, je.Code, text)
			}
			return te(tool.PermanentFailure, false, "%s %s was refused as invalid params (JSON-RPC %d): %s", a.what, a.host, je.Code, text)
		case jsonrpc.CodeInternalError:
			return te(tool.UpstreamUnavailable, applied, "%s %s failed with an internal error (JSON-RPC %d): %s", a.what, a.host, je.Code, text)
		case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound:
			return te(tool.PermanentFailure, false, "%s %s was refused (JSON-RPC %d): %s", a.what, a.host, je.Code, text)
		}
		return te(tool.PermanentFailure, applied, "%s %s failed (JSON-RPC %d): %s", a.what, a.host, je.Code, text)
	}
	if x.status >= 400 {
		return te(tool.PermanentFailure, false, "%s %s was answered %s", a.what, a.host, status)
	}
	text := clean(a.cred.Redact(err.Error()), MaxServerText)
	switch {
	case applied:
		return te(tool.UpstreamUnavailable, true, "%s %s was sent, and its answer was lost: %s", a.what, a.host, text)
	case a.call:
		return te(tool.UpstreamUnavailable, false, "%s %s failed before the request was sent: %s", a.what, a.host, text)
	}
	return te(tool.UpstreamUnavailable, false, "%s %s failed: %s", a.what, a.host, text)
}

// redactOutput passes a call's result through cred's Redact (nil cred:
// out as it is), so that a server quoting the credential back in a
// successful answer does not put it in the execution's state, its history
// or the ledger (docs/credentials.md, "At call time"). A result that is no
// longer JSON once redacted (the secret held JSON's own syntax) is
// TOOL_OUTPUT_INVALID, maybe applied: the tool ran.
func redactOutput(out json.RawMessage, cred *credential.Credential) (json.RawMessage, error) {
	if cred == nil || len(out) == 0 {
		return out, nil
	}
	r := cred.Redact(string(out))
	if r == string(out) {
		return out, nil
	}
	if !json.Valid([]byte(r)) {
		return nil, tool.Errorf(tool.OutputInvalid, "the answer holds the credential the call presented, which cannot be taken out of it and keep it JSON").Applied()
	}
	return json.RawMessage(r), nil
}
