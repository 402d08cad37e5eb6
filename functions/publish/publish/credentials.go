package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// RuleCredentialsForbidden refuses a credential write (set, revoke,
// allow) by a principal the scope's rule does not admit
// (docs/credentials.md, "Who may write each scope").
const RuleCredentialsForbidden = "credentials-forbidden"

// RuleCredentialsRunStarted refuses a run-scope write for a run whose
// start record exists: the start seals the run's scope.
const RuleCredentialsRunStarted = "credentials-run-started"

// CredentialMarker is one registered toolset id of a name with a target
// that declares auth: the "credential toolset" item (SK
// <target>#<origin>#TOOLSET#<toolset id>).
type CredentialMarker struct {
	ToolsetID    string
	Origin       string
	RegisteredAt time.Time
	// AllowedBy is who allowed the id for the target's credentials; ""
	// when it is not allowed.
	AllowedBy string
	AllowedAt time.Time
}

// StoredCredential is a credential item: its target (without Auth), its
// scope, the sealed secret and its metadata.
type StoredCredential struct {
	Target       credential.Target
	Scope        credential.Scope
	Sealed       credential.Sealed
	Version      int64
	CreatedAt    time.Time
	SetBy        string
	ExpiresAt    time.Time // zero: never
	ExecutionARN string    // the run scope's execution
}

// CredentialStore is the part of the credential items' store
// (shared/credential) the publish function calls.
type CredentialStore interface {
	// Markers are name's markers for target, at every origin.
	Markers(ctx context.Context, name, target string) ([]CredentialMarker, error)
	// MarkToolset records that toolset id, just registered, declares
	// auth for t.
	MarkToolset(ctx context.Context, t credential.Target, toolsetID string) error
	// Put stores c (replacing the item of its target, origin and scope)
	// and returns the version it was stored as.
	Put(ctx context.Context, c StoredCredential) (int64, error)
	// AllowRegistered allows every toolset id marked for t, by who, and
	// returns them.
	AllowRegistered(ctx context.Context, t credential.Target, by string) ([]string, error)
	// Allow allows toolset id for t, by who.
	Allow(ctx context.Context, t credential.Target, toolsetID, by string) error
	// List is every credential and marker of name.
	List(ctx context.Context, name string) ([]StoredCredential, []CredentialMarker, error)
	// Get is t's credential in scope s; nil when there is none.
	Get(ctx context.Context, t credential.Target, s credential.Scope) (*StoredCredential, error)
	// Delete deletes t's credential in scope s, reporting whether there
	// was one.
	Delete(ctx context.Context, t credential.Target, s credential.Scope) (bool, error)
}

// Starts reads the start records of executions (shared/review/dynamo's
// Store): review.ErrNotFound when an execution has none.
type Starts interface {
	Starter(ctx context.Context, executionARN string) (string, error)
}

// EndUserMapping says whether a principal may act for an end user (the
// platform's end-user mapping, shared/enduser).
type EndUserMapping interface {
	MayActFor(principal, endUser string) bool
}

// Credentials is what the publish function needs to manage credentials;
// the zero value (Store nil) refuses every credential request as this
// stage stores none.
type Credentials struct {
	Store CredentialStore
	// KMS and Key seal each credential (credential.Seal): the client and
	// the key's ARN or alias (publishapi.EnvCredentialKey).
	KMS credential.KMS
	Key string
	// Admins are the credential admins' patterns (reviewer patterns of
	// this account, publishapi.EnvCredentialAdmins); none: nobody.
	Admins []string
	// EndUsers and EndUserKey admit end-user-scope writes and name their
	// scope (credential.EndUserScope); nil: only admins write end users'
	// credentials, and with no key, nobody.
	EndUsers   EndUserMapping
	EndUserKey []byte
	Starts     Starts
	// ListWithCredential lists the MCP server at url presenting secret
	// for target t, for the registration of a draft whose server declares
	// auth. nil: such drafts are refused.
	ListWithCredential func(ctx context.Context, url string, t credential.Target, secret []byte) (toolset.Listed, error)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (c *Credentials) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// isAdmin reports whether principal matches a credential admin pattern.
func (c *Credentials) isAdmin(principal string) bool {
	return slices.ContainsFunc(c.Admins, func(p string) bool { return reviewer.Match(p, principal) })
}

// ParseCredentialAdmins reads publishapi.EnvCredentialAdmins: a JSON list
// of reviewer patterns (reviewer.CheckPattern), each naming account, the
// function's own; "" is none.
func ParseCredentialAdmins(text, account string) ([]string, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("%s: not a JSON list of strings", publishapi.EnvCredentialAdmins)
	}
	for i, p := range list {
		if err := reviewer.CheckPattern(p); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", publishapi.EnvCredentialAdmins, i, err)
		}
		if a := reviewer.Account(p); a != account {
			return nil, fmt.Errorf("%s[%d]: pattern names account %s, not this function's %s: credential admins are principals of the deployment's own account", publishapi.EnvCredentialAdmins, i, a, account)
		}
	}
	return list, nil
}

// writeDecision is whether a principal may write a scope's credential,
// and why.
type writeDecision struct {
	Allowed bool
	Reason  string
}

// decideWrite is the rule of who may write each scope
// (docs/credentials.md, "Who may write each scope"): the toolset scope,
// a credential admin; an end user's, a principal the end-user mapping
// lets act for that end user, or a credential admin; a run's, any caller
// of the publish function (a Publisher) while the run has not started.
// Default deny.
func decideWrite(principal string, admin bool, endUser string, mayActFor bool, run string) writeDecision {
	switch {
	case run != "":
		return writeDecision{true, "a run's credentials are set by who will start it"}
	case endUser != "" && mayActFor:
		return writeDecision{true, "the end-user mapping lets " + principal + " act for the end user"}
	case admin:
		return writeDecision{true, principal + " is a credential admin"}
	case endUser != "":
		return writeDecision{false, fmt.Sprintf("%s is neither a credential admin nor a principal the end-user mapping lets act for end user %q", principal, endUser)}
	}
	return writeDecision{false, principal + " is not a credential admin (platform configuration credentialAdmins; none by default)"}
}

// forbidden is the refusal of a decision.
func forbidden(d writeDecision, what string) error {
	return &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("%s is refused [%s]: %s", what, RuleCredentialsForbidden, d.Reason)}
}

// maxTarget bounds a target's name: an MCP server key or a host entry
// (a host name is at most 253 characters, and a port).
const maxTarget = 260

// checkCredentialRequest checks what every set and revoke names.
func checkCredentialRequest(r publishapi.CredentialRequest) error {
	switch {
	case !toolset.NamePattern.MatchString(r.Toolset):
		return &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("toolset %.60q is not a toolset name (%s)", r.Toolset, toolset.NamePattern)}
	case r.Target == "" || len(r.Target) > maxTarget || strings.ContainsAny(r.Target, "#/ \t\r\n"):
		return &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("target %.60q is not an MCP server key or a host entry", r.Target)}
	case r.EndUser != "" && r.Run != "":
		return &Error{Code: publishapi.CodeInvalid, Message: "end_user and run name two scopes: name one, or neither for the toolset's"}
	case len(r.EndUser) > 256 || strings.ContainsFunc(r.EndUser, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return &Error{Code: publishapi.CodeInvalid, Message: "end_user must be at most 256 characters, none of them a control character"}
	}
	if r.Run != "" {
		if _, err := executionName(r.Run); err != nil {
			return &Error{Code: publishapi.CodeInvalid, Message: err.Error()}
		}
	}
	return nil
}

// executionName is the name of execution ARN arn
// (arn:PARTITION:states:REGION:ACCOUNT:execution:STATE_MACHINE:NAME).
func executionName(arn string) (string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 8 || parts[0] != "arn" || parts[2] != "states" || parts[5] != "execution" || parts[7] == "" {
		return "", fmt.Errorf("run %.120q is not a Step Functions execution ARN (arn:aws:states:REGION:ACCOUNT:execution:STATE_MACHINE:NAME)", arn)
	}
	if err := credential.ParseScope(string(credential.RunScope(parts[7]))); err != nil {
		return "", fmt.Errorf("run %.120q: %v", arn, err)
	}
	return parts[7], nil
}

// scopeOf is the scope r names: the run's, the end user's (under
// EndUserKey) or the toolset's.
func (c *Credentials) scopeOf(r publishapi.CredentialRequest) (credential.Scope, error) {
	switch {
	case r.Run != "":
		name, err := executionName(r.Run)
		return credential.RunScope(name), err
	case r.EndUser != "":
		if len(c.EndUserKey) == 0 {
			return "", &Error{Code: publishapi.CodeUnavailable, Message: "this function has no end-user key: end users' credentials cannot be stored"}
		}
		return credential.EndUserScope(c.EndUserKey, r.EndUser), nil
	}
	return credential.ScopeToolset, nil
}

// authorize decides whether who may write r's scope, refusing with
// [credentials-forbidden], and a run scope's write once the run's start
// record exists with [credentials-run-started].
func (s *Service) authorize(ctx context.Context, who string, r publishapi.CredentialRequest, what string) error {
	c := &s.Credentials
	mayActFor := r.EndUser != "" && c.EndUsers != nil && c.EndUsers.MayActFor(who, r.EndUser)
	if d := decideWrite(who, c.isAdmin(who), r.EndUser, mayActFor, r.Run); !d.Allowed {
		return forbidden(d, what)
	}
	if r.Run == "" {
		return nil
	}
	if c.Starts == nil {
		return &Error{Code: publishapi.CodeUnavailable, Message: "this function cannot read start records: run credentials cannot be stored"}
	}
	_, err := c.Starts.Starter(ctx, r.Run)
	switch {
	case err == nil:
		return &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("%s is refused [%s]: run %s has started, and its start sealed its credentials", what, RuleCredentialsRunStarted, r.Run)}
	case !errors.Is(err, review.ErrNotFound):
		return &Error{Code: publishapi.CodeUnavailable, Message: "the run's start record could not be read", Err: err}
	}
	return nil
}

// storesCredentials refuses every credential request on a stage with no
// credential store or key.
func (s *Service) storesCredentials() error {
	if s.Credentials.Store == nil || s.Credentials.KMS == nil || s.Credentials.Key == "" {
		return &Error{Code: publishapi.CodeUnavailable, Message: fmt.Sprintf("stage %s stores no credentials: the publish function has no credentials key (%s)", s.Stage, publishapi.EnvCredentialKey)}
	}
	return nil
}

// SetCredential stores r's secret for the caller its proof proves
// (publishapi.CredentialSetBinding: bound to the secret's digest), after
// the scope's rule (decideWrite, authorize), for the origin of the most
// recently registered toolset of the name declaring the target; the
// secret is checked against that target's auth (credential.CheckSecret),
// sealed under the stage's key (credential.Seal) and stored, and every
// toolset id of the name registered with that target and origin is
// allowed for it. The secret is never logged, echoed or quoted.
func (s *Service) SetCredential(ctx context.Context, r publishapi.CredentialRequest, proof string) (*publishapi.CredentialSetResult, error) {
	if err := checkCredentialRequest(r); err != nil {
		return nil, err
	}
	if len(r.Secret) == 0 || len(r.Secret) > credential.MaxSecretBytes {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("the secret must be 1 to %d bytes", credential.MaxSecretBytes)}
	}
	var expires time.Time
	if r.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, r.ExpiresAt)
		if err != nil {
			return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("expires_at %.40q is not an RFC 3339 time", r.ExpiresAt)}
		}
		if !t.After(s.Credentials.now()) {
			return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("expires_at %s has passed", r.ExpiresAt)}
		}
		expires = t
	}
	who, err := s.verify(ctx, proof, publishapi.CredentialSetBinding(r))
	if err != nil {
		return nil, err
	}
	if err := s.storesCredentials(); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("setting the %s credential of toolset %s target %s", scopeKind(r), r.Toolset, r.Target)
	if err := s.authorize(ctx, who.Principal, r, what); err != nil {
		return nil, err
	}
	scope, err := s.Credentials.scopeOf(r)
	if err != nil {
		return nil, err
	}
	t, others, err := s.currentTarget(ctx, r.Toolset, r.Target)
	if err != nil {
		return nil, err
	}
	if err := credential.CheckSecret(r.Secret, t.Auth); err != nil {
		// CheckSecret's errors name the rule and an offset, never a byte.
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("the secret for toolset %s target %s is refused: %v", r.Toolset, r.Target, err)}
	}
	sealed, err := credential.Seal(ctx, s.Credentials.KMS, s.Credentials.Key, t, scope, r.Secret)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be sealed", Err: err}
	}
	item := StoredCredential{Target: credential.Target{ToolsetName: t.ToolsetName, Name: t.Name, Origin: t.Origin}, Scope: scope, Sealed: sealed,
		CreatedAt: s.Credentials.now().UTC(), SetBy: who.Principal, ExpiresAt: expires}
	if r.Run != "" {
		item.ExecutionARN = r.Run
	}
	version, err := s.Credentials.Store.Put(ctx, item)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be stored", Err: err}
	}
	allowed, err := s.Credentials.Store.AllowRegistered(ctx, t, who.Principal)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential was stored, but the registered toolset ids could not be allowed for it: set it again", Err: err}
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "credential set", "toolset", r.Toolset, "target", r.Target, "origin", t.Origin, "scope_kind", scope.Kind(),
			"version", version, "set_by", who.Principal, "allowed", len(allowed))
	}
	if allowed == nil {
		allowed = []string{}
	}
	return &publishapi.CredentialSetResult{Toolset: r.Toolset, Target: r.Target, Origin: t.Origin, Scope: string(scope), Version: version,
		SetBy: who.Principal, Allowed: allowed, OtherOrigins: others}, nil
}

// scopeKind names r's scope kind for messages: never an end user's id.
func scopeKind(r publishapi.CredentialRequest) string {
	switch {
	case r.Run != "":
		return "run " + r.Run
	case r.EndUser != "":
		return "end-user"
	}
	return "toolset-scope"
}

// currentTarget is target's declaration in the most recently registered
// toolset of name declaring it (its auth and origin), and the other
// origins other toolset ids of the name give it.
func (s *Service) currentTarget(ctx context.Context, name, target string) (credential.Target, []string, error) {
	markers, err := s.Credentials.Store.Markers(ctx, name, target)
	if err != nil {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeUnavailable, Message: "the registered toolsets could not be read", Err: err}
	}
	if len(markers) == 0 {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("no toolset %s registered in stage %s declares auth for target %s", name, s.Stage, target)}
	}
	latest := slices.MaxFunc(markers, func(a, b CredentialMarker) int {
		if c := a.RegisteredAt.Compare(b.RegisteredAt); c != 0 {
			return c
		}
		return strings.Compare(a.ToolsetID, b.ToolsetID)
	})
	ts, err := s.Store.Toolset(ctx, latest.ToolsetID)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return credential.Target{}, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("toolset %s (%s) is not registered in stage %s", name, latest.ToolsetID, s.Stage)}
		}
		return credential.Target{}, nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be read", Err: err}
	}
	var found *credential.Target
	for _, t := range authTargets(ts) {
		if t.Name == target {
			found = &t
		}
	}
	if found == nil {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("toolset %s (%s) declares no auth for target %s", name, ts.ID, target)}
	}
	var others []string
	for _, m := range markers {
		if m.Origin != found.Origin && !slices.Contains(others, m.Origin) {
			others = append(others, m.Origin)
		}
	}
	slices.Sort(others)
	return *found, others, nil
}

// authTargets are the targets of ts that declare auth, by name: each MCP
// server its tools pin with auth (origin the pinned URL's
// scheme://host[:port]) and each exact http host entry with auth (origin
// <origin_scheme>://<host entry>).
func authTargets(ts *toolset.Toolset) []credential.Target {
	byName := map[string]credential.Target{}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		m := ts.Tools[name].MCP
		if m == nil || m.Auth == nil {
			continue
		}
		u, err := url.Parse(m.URL)
		if err != nil {
			continue
		}
		byName[m.Server] = credential.Target{ToolsetName: ts.Name, Name: m.Server, Origin: u.Scheme + "://" + u.Host, Auth: *m.Auth}
	}
	for _, h := range ts.HTTPHosts {
		if h.Auth == nil {
			continue
		}
		scheme := h.Auth.OriginScheme
		if scheme == "" {
			scheme = "https"
		}
		byName[h.Host] = credential.Target{ToolsetName: ts.Name, Name: h.Host, Origin: scheme + "://" + h.Host, Auth: *h.Auth}
	}
	var out []credential.Target
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// ListCredentials lists the credentials and markers of toolset name:
// metadata only (never the ciphertext, the data key or the secret).
func (s *Service) ListCredentials(ctx context.Context, name, proof string) (*publishapi.CredentialListResult, error) {
	if !toolset.NamePattern.MatchString(name) {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("toolset %.60q is not a toolset name (%s)", name, toolset.NamePattern)}
	}
	who, err := s.verify(ctx, proof, publishapi.CredentialListBinding(name))
	if err != nil {
		return nil, err
	}
	if err := s.storesCredentials(); err != nil {
		return nil, err
	}
	creds, markers, err := s.Credentials.Store.List(ctx, name)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credentials could not be read", Err: err}
	}
	out := &publishapi.CredentialListResult{Toolset: name, Credentials: []publishapi.CredentialInfo{}, Toolsets: []publishapi.CredentialToolset{}}
	for _, c := range creds {
		info := publishapi.CredentialInfo{Target: c.Target.Name, Origin: c.Target.Origin, Scope: string(c.Scope), Version: c.Version,
			CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339), SetBy: c.SetBy, ExecutionARN: c.ExecutionARN}
		if !c.ExpiresAt.IsZero() {
			info.ExpiresAt = c.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out.Credentials = append(out.Credentials, info)
	}
	for _, m := range markers {
		row := publishapi.CredentialToolset{ToolsetID: m.ToolsetID, Origin: m.Origin, AllowedBy: m.AllowedBy}
		if !m.AllowedAt.IsZero() {
			row.AllowedAt = m.AllowedAt.UTC().Format(time.RFC3339)
		}
		out.Toolsets = append(out.Toolsets, row)
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "credentials listed", "toolset", name, "reader", who.Principal, "credentials", len(creds))
	}
	return out, nil
}

// RevokeCredential deletes r's credential for the caller its proof
// proves: who may set a scope's credential may revoke it, and a run's
// also who set it.
func (s *Service) RevokeCredential(ctx context.Context, r publishapi.CredentialRequest, proof string) (*publishapi.CredentialRevokeResult, error) {
	if err := checkCredentialRequest(r); err != nil {
		return nil, err
	}
	who, err := s.verify(ctx, proof, publishapi.CredentialRevokeBinding(r))
	if err != nil {
		return nil, err
	}
	if err := s.storesCredentials(); err != nil {
		return nil, err
	}
	scope, err := s.Credentials.scopeOf(r)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("revoking the %s credential of toolset %s target %s", scopeKind(r), r.Toolset, r.Target)
	markers, err := s.Credentials.Store.Markers(ctx, r.Toolset, r.Target)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the registered toolsets could not be read", Err: err}
	}
	origins := []string{}
	for _, m := range markers {
		if !slices.Contains(origins, m.Origin) {
			origins = append(origins, m.Origin)
		}
	}
	c := &s.Credentials
	revoked := false
	for _, origin := range origins {
		t := credential.Target{ToolsetName: r.Toolset, Name: r.Target, Origin: origin}
		if r.Run != "" {
			// A run's credential: its setter, or a credential admin.
			item, err := c.Store.Get(ctx, t, scope)
			if err != nil {
				return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be read", Err: err}
			}
			if item == nil {
				continue
			}
			if item.SetBy != who.Principal && !c.isAdmin(who.Principal) {
				return nil, forbidden(writeDecision{false, who.Principal + " neither set it nor is a credential admin"}, what)
			}
		} else {
			mayActFor := r.EndUser != "" && c.EndUsers != nil && c.EndUsers.MayActFor(who.Principal, r.EndUser)
			if d := decideWrite(who.Principal, c.isAdmin(who.Principal), r.EndUser, mayActFor, ""); !d.Allowed {
				return nil, forbidden(d, what)
			}
		}
		ok, err := c.Store.Delete(ctx, t, scope)
		if err != nil {
			return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be deleted", Err: err}
		}
		revoked = revoked || ok
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "credential revoked", "toolset", r.Toolset, "target", r.Target, "scope_kind", scope.Kind(), "revoked", revoked, "by", who.Principal)
	}
	return &publishapi.CredentialRevokeResult{Revoked: revoked}, nil
}

// AllowCredentials allows registered toolset id to use its name's
// credentials, for each of its targets that declare auth at their
// origins: a credential admin's only.
func (s *Service) AllowCredentials(ctx context.Context, id, proof string) (*publishapi.CredentialAllowResult, error) {
	if !tool.ToolsetIDPattern.MatchString(id) {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("%.40q is not a toolset id (%s)", id, tool.ToolsetIDPattern)}
	}
	who, err := s.verify(ctx, proof, publishapi.CredentialAllowBinding(id))
	if err != nil {
		return nil, err
	}
	if err := s.storesCredentials(); err != nil {
		return nil, err
	}
	if d := decideWrite(who.Principal, s.Credentials.isAdmin(who.Principal), "", false, ""); !d.Allowed {
		return nil, forbidden(d, "allowing toolset "+id+" for its name's credentials")
	}
	ts, err := s.Store.Toolset(ctx, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("toolset %s is not registered in stage %s", id, s.Stage)}
	case err != nil:
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be read", Err: err}
	}
	targets := authTargets(ts)
	if len(targets) == 0 {
		return nil, &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("toolset %s declares auth for no target: it uses no credentials", id)}
	}
	out := &publishapi.CredentialAllowResult{ToolsetID: id, AllowedBy: who.Principal}
	for _, t := range targets {
		if err := s.Credentials.Store.Allow(ctx, t, id, who.Principal); err != nil {
			return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be allowed", Err: err}
		}
		out.Targets = append(out.Targets, t.Name+" ("+t.Origin+")")
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "toolset allowed for credentials", "toolset_id", id, "targets", len(targets), "by", who.Principal)
	}
	return out, nil
}

// markToolset records, for each target of ts, just registered, that
// declares auth, its marker (CredentialStore.MarkToolset): what a later
// set allows and an allow names. A stage that stores no credentials
// records none.
func (s *Service) markToolset(ctx context.Context, ts *toolset.Toolset) error {
	if s.Credentials.Store == nil {
		return nil
	}
	for _, t := range authTargets(ts) {
		if err := s.Credentials.Store.MarkToolset(ctx, t, ts.ID); err != nil {
			return &Error{Code: publishapi.CodeUnavailable, Message: "the toolset was registered, but its credential targets could not be recorded: register it again", Err: err}
		}
	}
	return nil
}

// draftLister lists draft's servers: s.MCP for a server without auth;
// for one that declares auth, ListWithCredential presenting the
// toolset-scope credential of the draft's name, the server's key and its
// URL's origin, opened read-only (credential.Open, scope toolset: the only
// scope the key policy lets this function decrypt). A server whose
// credential is not set, or a deployment that cannot list with one,
// refuses the draft.
func (s *Service) draftLister(draft *toolset.Toolset) toolset.Lister {
	auths := map[string]credential.Target{}
	for key, srv := range draft.MCPServers {
		if srv.Auth == nil {
			continue
		}
		u, err := url.Parse(srv.URL)
		if err != nil {
			continue
		}
		auths[srv.URL] = credential.Target{ToolsetName: draft.Name, Name: key, Origin: u.Scheme + "://" + u.Host, Auth: *srv.Auth}
	}
	return func(ctx context.Context, u string) (toolset.Listed, error) {
		t, ok := auths[u]
		if !ok {
			return s.MCP(ctx, u)
		}
		c := &s.Credentials
		if c.ListWithCredential == nil || c.Store == nil || c.KMS == nil {
			return toolset.Listed{}, fmt.Errorf("server %s declares auth, and this deployment's publish function cannot list a server with its credential", t.Name)
		}
		item, err := c.Store.Get(ctx, t, credential.ScopeToolset)
		if err != nil {
			return toolset.Listed{}, fmt.Errorf("server %s: its credential could not be read", t.Name)
		}
		if item == nil {
			return toolset.Listed{}, fmt.Errorf("server %s declares auth, and toolset %s has no toolset-scope credential for it at %s: a credential admin sets one (toolgate credentials set --toolset %s --target %s)", t.Name, t.ToolsetName, t.Origin, t.ToolsetName, t.Name)
		}
		if !item.ExpiresAt.IsZero() && !item.ExpiresAt.After(c.now()) {
			return toolset.Listed{}, fmt.Errorf("server %s: toolset %s's toolset-scope credential expired at %s", t.Name, t.ToolsetName, item.ExpiresAt.UTC().Format(time.RFC3339))
		}
		secret, err := credential.Open(ctx, c.KMS, t, credential.ScopeToolset, item.Sealed)
		if err != nil {
			return toolset.Listed{}, fmt.Errorf("server %s: its toolset-scope credential could not be opened", t.Name)
		}
		defer clear(secret)
		return c.ListWithCredential(ctx, u, t, secret)
	}
}
