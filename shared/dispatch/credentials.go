package dispatch

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Credentials resolves the credential a call presents to its target
// (shared/credential's Resolver): the first scope of run, end user and
// toolset that holds one for the target's origin, allowed for the run's
// toolset id. Its errors are *tool.Error: TOOL_PERMISSION_DENIED naming
// the scopes tried when there is none, CALL_PARKED (cause
// credentials.expired) naming the scope and target when the one found
// has expired; any other error is the store or KMS being unavailable.
type Credentials interface {
	Resolve(ctx context.Context, req credential.Request) (*credential.Credential, error)
}

// resolveCredential resolves the credential of a call whose target
// declares auth (docs/credentials.md, "Call time"), once the input and
// any approval are checked and before the tool's check (which lists an MCP
// server with it) and the claim: nil, go on (with inv.cred set when the
// target declares auth). A call it stops was not sent and its key is left
// as it was, as the check's (check.go):
//
//   - the credential found has expired (credential_expires_at reached):
//     a PARKED row, and CALL_PARKED with the resolver's message, cause
//     credentials.expired, naming the scope and target;
//   - none is found, or the toolset id is not allowed for the target's
//     credentials: a REFUSED row, TOOL_PERMISSION_DENIED naming the
//     scopes tried;
//   - the function has no credential store (Deps.Credentials nil): a
//     REFUSED row, TOOL_PERMISSION_DENIED;
//   - the store or KMS cannot be reached: a REFUSED row,
//     TOOL_UPSTREAM_UNAVAILABLE (retryable).
//
// As with the check, a call whose key holds its COMPLETED record is a
// replay of that result whichever of these it meets: it was sent, and
// answered, before.
func (inv *invocation) resolveCredential(ctx context.Context) *outcome {
	d, env := inv.d, inv.env
	target, ok := inv.authTarget()
	if !ok {
		return nil
	}
	if d.creds == nil {
		d.log.ErrorContext(ctx, "a target declares auth, and this function has no credential store", "tool", env.Tool, "target", target.Name)
		return inv.replayOr(ctx, tool.Errorf(tool.PermissionDenied, "%s declares auth, and this function has no credential store configured (docs/credentials.md)", target.Name))
	}
	req := credential.Request{Target: target, ToolsetID: env.ToolsetID, RunID: env.RunID}
	if inv.lane != lane.Direct {
		// The direct lane has neither a verified starter nor an end user:
		// toolset scope only.
		req.Starter, req.EndUser = inv.start()
	}
	c, err := d.creds.Resolve(ctx, req)
	if err == nil && c == nil {
		err = errors.New("the credential store resolved nothing and no error")
	}
	if err != nil {
		var te *tool.Error
		if !errors.As(err, &te) || te == nil {
			d.log.ErrorContext(ctx, "credential not resolved", "tool", env.Tool, "target", target.Name, "error", err)
			return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the credentials of %s cannot be read now", target.Name))
		}
		te = tool.Classify(te)
		if te.Code == tool.CallParked {
			return inv.replayOrEnd(ctx, &outcome{write: writeRow, status: ledger.StatusParked, err: te})
		}
		return inv.replayOr(ctx, te)
	}
	inv.cred = c
	return nil
}

// authTarget is the target the call presents a credential to, and false
// when it presents none: an MCP tool whose pinned server declares auth
// (the server's key; the origin of its pinned URL), or an http call whose
// host entry (Config.Contract's) declares auth (the entry; the origin
// <origin_scheme>://<entry>) (docs/credentials.md, "Declaration").
func (inv *invocation) authTarget() (credential.Target, bool) {
	if m := inv.pinned.MCP; m != nil && m.Auth != nil {
		return credential.Target{ToolsetName: inv.ts.Name, Name: m.Server, Origin: urlOrigin(m.URL), Auth: *m.Auth}, true
	}
	if h := inv.authHost; h != nil && h.Auth != nil {
		return credential.Target{ToolsetName: inv.ts.Name, Name: h.Host, Origin: hostOrigin(h), Auth: *h.Auth}, true
	}
	return credential.Target{}, false
}

// urlOrigin is a pinned MCP URL's origin: its scheme, "://", its host and
// its port when the URL writes one.
func urlOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// hostOrigin is an http host entry's origin: its origin_scheme (https
// when not set), "://" and the entry.
func hostOrigin(h *toolset.HTTPHost) string {
	scheme := "https"
	if h.Auth != nil && h.Auth.OriginScheme != "" {
		scheme = h.Auth.OriginScheme
	}
	return scheme + "://" + h.Host
}

// start is the run's verified starter and end-user scope, from the
// envelope's start member; "" for each when the envelope has none (a
// definition published before it).
func (inv *invocation) start() (starter string, endUser credential.Scope) {
	return "", ""
}
