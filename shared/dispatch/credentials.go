package dispatch

import (
	"context"
	"errors"
	"strings"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/webhook"
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
// declares auth (docs/credentials.md, "At call time"), once the input and
// any approval are checked and before the tool's check (which lists an MCP
// server with it) and the claim: nil, go on (with inv.cred set when the
// target declares auth). A call it stops was not sent and its key is left
// as it was, as the check's (check.go):
//
//   - the credential found has expired (credential_expires_at reached):
//     a PARKED row, and CALL_PARKED with the resolver's message, cause
//     credentials.expired, naming the scope and target, and a
//     credentials.expired webhook event (events.go);
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
	if target.Origin == "" {
		return refused(tool.Errorf(tool.PermissionDenied, "%s declares auth, and the run's toolset gives it no origin a credential could be bound to", target.Name))
	}
	if d.creds == nil {
		d.log.ErrorContext(ctx, "a target declares auth, and this function has no credential store", "tool", env.Tool, "target", target.Name)
		return inv.replayOr(ctx, tool.Errorf(tool.PermissionDenied, "%s declares auth, and this function has no credential store configured (docs/credentials.md)", target.Name))
	}
	// A call sent again under a decided park reads the credentials
	// afresh: a resumed one waited for its credential to be set, and a
	// credential read before the set must not park it again.
	req := credential.Request{Target: target, ToolsetID: env.ToolsetID, RunID: env.RunID, Fresh: inv.parkID != ""}
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
			return inv.replayOrEnd(ctx, parked(te, webhook.CredentialsExpired))
		}
		return inv.replayOr(ctx, te)
	}
	inv.cred = c
	return nil
}

// refusedCredential reports whether te, a CALL_PARKED error, says that
// the server refused the credential the call presented as an invalid
// token (credential.Credential.Refused: its message starts with
// credential.CauseExpired; RFC 6750 §3.1). Only a call that carried a
// credential can have had it refused.
func (inv *invocation) refusedCredential(te *tool.Error) bool {
	return inv.cred != nil && strings.HasPrefix(te.Message, credential.CauseExpired+":")
}

// credentialPark is what the PARKED row of a call whose server refused
// its credential records (docs/parking.md, "The PARKED row"): the target
// and the scope of the credential the call presented, whatever the
// tool's or the check's error carries; a detail naming neither when the
// call presented none.
func (inv *invocation) credentialPark() *park.Detail {
	d := &park.Detail{Cause: park.CredentialsExpired}
	if target, ok := inv.authTarget(); ok && inv.cred != nil {
		d.Target, d.Scope = target.Name, string(inv.cred.Scope)
	}
	return d
}

// authTarget is the target the call presents a credential to, and false
// when it presents none (docs/credentials.md, "Declaring what a target needs"): an MCP
// tool's pinned server when it declares auth (toolset.MCPAuthTarget), or
// the http_hosts entry Config.Contract chose for the call when it does
// (toolset.HTTPAuthTarget).
func (inv *invocation) authTarget() (credential.Target, bool) {
	var t toolset.AuthTarget
	var ok bool
	switch {
	case inv.pinned.MCP != nil && inv.pinned.MCP.Auth != nil:
		t, ok = inv.ts.MCPAuthTarget(inv.pinned.MCP.Server)
		if !ok {
			// A pin whose URL gives no origin (the toolset's verification
			// refuses it): its Origin stays empty, and resolveCredential
			// refuses the call.
			t = toolset.AuthTarget{Name: inv.pinned.MCP.Server, Auth: *inv.pinned.MCP.Auth, MCP: true}
		}
	case inv.authHost != nil && inv.authHost.Auth != nil:
		t, ok = inv.ts.HTTPAuthTarget(inv.authHost.Host)
		if !ok {
			t = toolset.AuthTarget{Name: inv.authHost.Host, Auth: *inv.authHost.Auth}
		}
	default:
		return credential.Target{}, false
	}
	return credential.Target{ToolsetName: inv.ts.Name, Name: t.Name, Origin: t.Origin, Auth: t.Auth}, true
}

// start is the run's verified starter and end-user scope, from the
// envelope's start member (tool.Start); "" for each when the envelope has
// none (a definition published before it) or a null.
func (inv *invocation) start() (starter string, endUser credential.Scope) {
	st := inv.env.Start
	if st == nil {
		return "", ""
	}
	if st.EndUser != nil {
		endUser = credential.Scope(*st.EndUser)
	}
	return st.Starter, endUser
}
