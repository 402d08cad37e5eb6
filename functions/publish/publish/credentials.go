package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
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

// CredentialStore is the part of the credential items' store
// (vault.Store) the publish function calls.
type CredentialStore interface {
	Put(ctx context.Context, it vault.Item) (int64, error)
	Delete(ctx context.Context, t credential.Target, s credential.Scope) error
	List(ctx context.Context, toolsetName string) (vault.Listing, error)
	MarkToolset(ctx context.Context, t credential.Target, toolsetID string) error
	Allow(ctx context.Context, t credential.Target, toolsetID, by string) error
	AllowRegistered(ctx context.Context, t credential.Target, by string) ([]string, error)
	// RunStart reports whether a run's start record exists, and its
	// verified starter.
	RunStart(ctx context.Context, executionARN string) (starter string, started bool, err error)
	// ToolsetCredential reads a target's toolset-scope credential, sealed:
	// what listing a draft's server with its credential opens.
	ToolsetCredential(ctx context.Context, t credential.Target) (vault.Sealed, time.Time, bool, error)
}

// ParkLister lists the parks of a status (shared/park/dynamo Store's
// ListByStatus: a Query of the parks-by-status index, keep filtering).
type ParkLister interface {
	ListByStatus(ctx context.Context, st park.Status, keep func(*park.Park) bool) ([]*park.Park, error)
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
	// KMS and Key seal each credential (vault.Seal): the client and
	// the key's ARN or alias (publishapi.EnvCredentialKey).
	KMS vault.KMS
	Key string
	// Admins are the credential admins' patterns (reviewer patterns of
	// this account, publishapi.EnvCredentialAdmins); none: nobody.
	Admins []string
	// EndUsers and EndUserKey admit end-user-scope writes and name their
	// scope (credential.EndUserScope); nil: only admins write end users'
	// credentials, and with no key, nobody.
	EndUsers   EndUserMapping
	EndUserKey []byte
	// Parks lists the parked calls, for the one exception to a started
	// run's sealed scope (authorize); nil: no exception, a started run's
	// credential is never set again.
	Parks ParkLister
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
	return reviewer.IsAdmin(c.Admins, principal)
}

// ParseCredentialAdmins reads publishapi.EnvCredentialAdmins: a JSON list
// of reviewer patterns (reviewer.CheckPattern), each naming account, the
// function's own; "" is none (reviewer.ParseAdmins).
func ParseCredentialAdmins(text, account string) ([]string, error) {
	return reviewer.ParseAdmins(publishapi.EnvCredentialAdmins, text, account)
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
	}
	if r.EndUser != "" {
		if err := enduser.CheckID(r.EndUser); err != nil {
			return &Error{Code: publishapi.CodeInvalid, Message: "end_user: " + err.Error()}
		}
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
// record exists with [credentials-run-started], but for the one exception
// to a started run's sealed scope (reopen true; docs/credentials.md, "Run
// credentials"): the run's verified starter (its start record's) setting
// the target again while a call of the run waits in a PARKED park of
// cause credentials.expired on that target in the run's scope
// (waitsOnRunCredential). Only set takes the exception: a revoke checks
// decideWrite alone.
func (s *Service) authorize(ctx context.Context, who string, r publishapi.CredentialRequest, what string) (reopen bool, err error) {
	c := &s.Credentials
	mayActFor := r.EndUser != "" && c.EndUsers != nil && c.EndUsers.MayActFor(who, r.EndUser)
	if d := decideWrite(who, c.isAdmin(who), r.EndUser, mayActFor, r.Run); !d.Allowed {
		return false, forbidden(d, what)
	}
	if r.Run == "" {
		return false, nil
	}
	starter, started, err := c.Store.RunStart(ctx, r.Run)
	switch {
	case err != nil:
		return false, &Error{Code: publishapi.CodeUnavailable, Message: "the run's start record could not be read", Err: err}
	case !started:
		return false, nil
	case starter != "" && starter == who:
		waits, err := s.waitsOnRunCredential(ctx, r)
		if err != nil {
			return false, &Error{Code: publishapi.CodeUnavailable, Message: "the run's parked calls could not be read", Err: err}
		}
		if waits {
			return true, nil
		}
	}
	return false, &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("%s is refused [%s]: run %s has started, and its start sealed its credentials; "+
		"only its starter may set this target's again, and only while a call of the run is parked because it expired (credentials.expired)", what, RuleCredentialsRunStarted, r.Run)}
}

// waitsOnRunCredential reports whether a call of run r.Run waits in a
// PARKED park, not past its deadline, of cause credentials.expired on
// target r.Target in the run's scope (park.Park's Target and Scope, as
// the vault names them): a Query of the parks-by-status index
// (Credentials.Parks). No lister: false.
func (s *Service) waitsOnRunCredential(ctx context.Context, r publishapi.CredentialRequest) (bool, error) {
	c := &s.Credentials
	if c.Parks == nil {
		return false, nil
	}
	scope, err := c.scopeOf(r)
	if err != nil {
		return false, err
	}
	now := c.now()
	found, err := c.Parks.ListByStatus(ctx, park.StatusParked, func(p *park.Park) bool {
		return p.RunID == r.Run && p.Cause == park.CredentialsExpired && p.Target == r.Target && p.Scope == string(scope) && !p.Expired(now)
	})
	return len(found) > 0, err
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
// sealed under the stage's key (vault.Seal) and stored; a credential
// admin's set also allows every toolset id of the name registered with
// that target and origin. The secret is never logged, echoed or quoted.
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
	if len(r.Salt) != publishapi.SaltBytes {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("salt: %d bytes, want %d random bytes drawn for this set (publishapi.NewSalt): update toolgate", len(r.Salt), publishapi.SaltBytes)}
	}
	who, err := s.verify(ctx, proof, publishapi.CredentialSetBinding(r))
	if err != nil {
		return nil, err
	}
	if err := s.storesCredentials(); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("setting the %s credential of toolset %s target %s", scopeKind(r), r.Toolset, r.Target)
	reopen, err := s.authorize(ctx, who.Principal, r, what)
	if err != nil {
		return nil, err
	}
	scope, err := s.Credentials.scopeOf(r)
	if err != nil {
		return nil, err
	}
	t, others, err := s.currentTarget(ctx, r.Toolset, r.Target, r.Draft, r.Origin)
	if err != nil {
		return nil, err
	}
	if err := credential.CheckSecret(r.Secret, t.Auth); err != nil {
		// CheckSecret's errors name the rule and an offset, never a byte.
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("the secret for toolset %s target %s is refused: %v", r.Toolset, r.Target, err)}
	}
	sealed, err := vault.Seal(ctx, s.Credentials.KMS, s.Credentials.Key, t, scope, r.Secret)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be sealed", Err: err}
	}
	item := vault.Item{Target: t, Scope: scope, Sealed: sealed, SetBy: who.Principal, ExpiresAt: expires}
	if r.Run != "" {
		// The item outlives the longest run started now (RunCredentialRetention).
		item.ExecutionARN, item.DeleteAfter = r.Run, s.Credentials.now().Add(RunCredentialRetention)
		item.Reopen = reopen
	}
	version, err := s.Credentials.Store.Put(ctx, item)
	if errors.Is(err, vault.ErrSetByAnother) && reopen {
		return nil, forbidden(writeDecision{false, "run " + r.Run + " has started, and you set no credential of scope " + string(scope) + " for this target at origin " + t.Origin +
			" for it before it did: a started run's credential is only replaced, by its setter, at its origin"}, what)
	}
	if errors.Is(err, vault.ErrSetByAnother) {
		return nil, forbidden(writeDecision{false, "a credential of run scope " + string(scope) + " for this target was set by another principal or for another execution of that name, and only its setter may replace it, for the same execution"}, what)
	}
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be stored", Err: err}
	}
	// Only a credential admin's set allows the registered ids: allowing
	// an id is the admin's decision (docs/credentials.md, "Which toolsets
	// may use a credential"), and an end user's or a run's setter must
	// not let a toolset registered later under the name use the name's
	// credentials.
	// And only its first: once an id is allowed for the target at this
	// origin, a set (a rotation) allows no other, so that a toolset
	// registered under the name in between is allowed only by `credentials
	// allow`, after a `toolset diff`.
	var allowed []string
	first, err := s.noneAllowed(ctx, t)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential was stored, but the registered toolset ids could not be read: set it again", Err: err}
	}
	if first && s.Credentials.isAdmin(who.Principal) {
		if allowed, err = s.Credentials.Store.AllowRegistered(ctx, t, who.Principal); err != nil {
			return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential was stored, but the registered toolset ids could not be allowed for it: set it again", Err: err}
		}
	}
	if s.Log != nil {
		// A started run's credential set again is recorded here and on
		// its item (set_by, created_at): who, and when.
		s.Log.InfoContext(ctx, "credential set", "toolset", r.Toolset, "target", r.Target, "origin", t.Origin, "scope_kind", scope.Kind(),
			"version", version, "set_by", who.Principal, "allowed", len(allowed), "run_started", reopen)
	}
	if allowed == nil {
		allowed = []string{}
	}
	return &publishapi.CredentialSetResult{Toolset: r.Toolset, Target: r.Target, Origin: t.Origin, Scope: string(scope), Version: version,
		SetBy: who.Principal, Allowed: allowed, OtherOrigins: others}, nil
}

// noneAllowed reports whether no toolset id of t's name is allowed for
// t's target at t's origin yet.
func (s *Service) noneAllowed(ctx context.Context, t credential.Target) (bool, error) {
	ms, err := s.markers(ctx, t.ToolsetName, t.Name)
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.Origin == t.Origin && m.AllowedBy != "" {
			return false, nil
		}
	}
	return true, nil
}

// RunCredentialRetention is how long a run-scope credential's item is
// kept (its TTL, DynamoDB deleting it after): the longest a run set up now
// may live, a year (review.MaxTimeout, a Standard execution's longest
// life), and a day.
const RunCredentialRetention = time.Duration(review.MaxTimeout)*time.Second + 24*time.Hour

// markers are name's markers of target, at every origin (one Query of
// the name's partition: CredentialStore.List).
func (s *Service) markers(ctx context.Context, name, target string) ([]vault.Marker, error) {
	l, err := s.Credentials.Store.List(ctx, name)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the registered toolsets could not be read", Err: err}
	}
	var out []vault.Marker
	for _, m := range l.Markers {
		if m.Target == target {
			out = append(out, m)
		}
	}
	return out, nil
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

// currentTarget is target's declaration, its auth and origin, and the
// other origins toolset ids of name give it. A draft (a draft toolset
// document of that name, or "") gives it whenever one is sent, registered
// toolsets of the name or not: the set's proof is bound to the draft, so
// the secret is for the draft's server, and a secret meant for one origin
// must never be stored for another; origin, when given, must be the
// draft's. Without a draft, origin is required, and the most recently
// registered toolset of name declaring the target at that origin gives
// it: the origin is the setter's to say, bound by their proof, never the
// latest registration's, which anyone allowed to register may make.
func (s *Service) currentTarget(ctx context.Context, name, target, draft, origin string) (credential.Target, []string, error) {
	markers, err := s.markers(ctx, name, target)
	if err != nil {
		return credential.Target{}, nil, err
	}
	if draft != "" {
		d, err := toolset.ParseDraft([]byte(draft))
		if err != nil {
			return credential.Target{}, nil, &Error{Code: publishapi.CodeInvalid, Message: "draft: " + draftError(err)}
		}
		at, ok := d.MCPAuthTarget(target)
		if d.Name != name || !ok {
			return credential.Target{}, nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("the draft is not toolset %s with MCP server %s declaring auth", name, target)}
		}
		if origin != "" && origin != at.Origin {
			return credential.Target{}, nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("origin %.200s is not the draft's server's origin %s", origin, at.Origin)}
		}
		return credential.Target{ToolsetName: name, Name: at.Name, Origin: at.Origin, Auth: at.Auth}, otherOrigins(markers, at.Origin), nil
	}
	if len(markers) == 0 {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("no toolset %s registered in stage %s declares auth for target %s: register it first, or, for a draft whose MCP server needs the credential to be listed, send the draft with the set (toolgate credentials set --draft FILE)", name, s.Stage, target)}
	}
	if origin == "" {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("name the origin the credential is for (toolgate credentials set --origin): registered toolsets of %s declare target %s at %s", name, target, strings.Join(originsOf(markers), ", "))}
	}
	var at []vault.Marker
	for _, m := range markers {
		if m.Origin == origin {
			at = append(at, m)
		}
	}
	if len(at) == 0 {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("no toolset %s registered in stage %s declares target %s at origin %.200s; they declare it at %s", name, s.Stage, target, origin, strings.Join(originsOf(markers), ", "))}
	}
	markers, all := at, markers
	latest := slices.MaxFunc(markers, func(a, b vault.Marker) int {
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
	if found == nil || found.Origin != origin {
		return credential.Target{}, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("toolset %s (%s) declares no auth for target %s at origin %.200s", name, ts.ID, target, origin)}
	}
	return *found, otherOrigins(all, found.Origin), nil
}

// originsOf are the origins of markers, sorted, each once.
func originsOf(markers []vault.Marker) []string {
	return otherOrigins(markers, "")
}

// otherOrigins are the origins of markers other than origin, sorted,
// each once.
func otherOrigins(markers []vault.Marker, origin string) []string {
	var others []string
	for _, m := range markers {
		if m.Origin != origin && !slices.Contains(others, m.Origin) {
			others = append(others, m.Origin)
		}
	}
	slices.Sort(others)
	return others
}

// authTargets are the targets of ts that declare auth
// (toolset.AuthTargets), as credential targets of its name.
func authTargets(ts *toolset.Toolset) []credential.Target {
	var out []credential.Target
	for _, t := range ts.AuthTargets() {
		out = append(out, credential.Target{ToolsetName: ts.Name, Name: t.Name, Origin: t.Origin, Auth: t.Auth})
	}
	return out
}

// ListCredentials lists the credentials and markers of toolset name:
// metadata only (never the ciphertext, the data key or the secret). A
// run-scope credential is listed to its setter and to credential admins
// only; others get its count (HiddenRuns).
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
	l, err := s.Credentials.Store.List(ctx, name)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credentials could not be read", Err: err}
	}
	creds, markers := l.Credentials, l.Markers
	out := &publishapi.CredentialListResult{Toolset: name, Credentials: []publishapi.CredentialInfo{}, Toolsets: []publishapi.CredentialToolset{}}
	admin := s.Credentials.isAdmin(who.Principal)
	for _, c := range creds {
		if c.Scope.Kind() == credential.KindRun && !admin && c.SetBy != who.Principal {
			out.HiddenRuns++
			continue
		}
		info := publishapi.CredentialInfo{Target: c.Target, Origin: c.Origin, Scope: string(c.Scope), Version: c.Version,
			CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339), SetBy: c.SetBy, ExecutionARN: c.ExecutionARN}
		if !c.ExpiresAt.IsZero() {
			info.ExpiresAt = c.ExpiresAt.UTC().Format(time.RFC3339)
		}
		out.Credentials = append(out.Credentials, info)
	}
	for _, m := range markers {
		row := publishapi.CredentialToolset{ToolsetID: m.ToolsetID, Target: m.Target, Origin: m.Origin, AllowedBy: m.AllowedBy}
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
	c := &s.Credentials
	admin := c.isAdmin(who.Principal)
	if r.Run == "" {
		mayActFor := r.EndUser != "" && c.EndUsers != nil && c.EndUsers.MayActFor(who.Principal, r.EndUser)
		if d := decideWrite(who.Principal, admin, r.EndUser, mayActFor, ""); !d.Allowed {
			return nil, forbidden(d, what)
		}
	}
	l, err := c.Store.List(ctx, r.Toolset)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credentials could not be read", Err: err}
	}
	revoked := false
	for _, m := range l.Credentials {
		if m.Target != r.Target || m.Scope != scope {
			continue
		}
		// A run's credential: who set it, or a credential admin.
		if r.Run != "" && m.SetBy != who.Principal && !admin {
			return nil, forbidden(writeDecision{false, who.Principal + " neither set it nor is a credential admin"}, what)
		}
		err := c.Store.Delete(ctx, credential.Target{ToolsetName: r.Toolset, Name: m.Target, Origin: m.Origin}, scope)
		switch {
		case errors.Is(err, vault.ErrNotFound):
		case err != nil:
			return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the credential could not be deleted", Err: err}
		default:
			revoked = true
		}
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
// URL's origin, opened read-only (vault.Open, scope toolset: the only
// scope the key policy lets this function decrypt). A server whose
// credential is not set, or a deployment that cannot list with one,
// refuses the draft.
func (s *Service) draftLister(draft *toolset.Toolset) toolset.Lister {
	auths := map[string]credential.Target{} // by the server's URL
	for _, t := range authTargets(draft) {
		if srv, ok := draft.MCPServers[t.Name]; ok && t.Name != "" {
			auths[srv.URL] = t
		}
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
		sealed, expires, ok, err := c.Store.ToolsetCredential(ctx, t)
		if err != nil {
			return toolset.Listed{}, fmt.Errorf("server %s: its credential could not be read", t.Name)
		}
		if !ok {
			return toolset.Listed{}, fmt.Errorf("server %s declares auth, and toolset %s has no toolset-scope credential for it at %s: a credential admin sets one (toolgate credentials set --toolset %s --target %s)", t.Name, t.ToolsetName, t.Origin, t.ToolsetName, t.Name)
		}
		if !expires.IsZero() && !expires.After(c.now()) {
			return toolset.Listed{}, fmt.Errorf("server %s: toolset %s's toolset-scope credential expired at %s", t.Name, t.ToolsetName, expires.UTC().Format(time.RFC3339))
		}
		secret, err := vault.Open(ctx, c.KMS, t, credential.ScopeToolset, sealed)
		if err != nil {
			return toolset.Listed{}, fmt.Errorf("server %s: its toolset-scope credential could not be opened", t.Name)
		}
		defer clear(secret)
		return c.ListWithCredential(ctx, u, t, secret)
	}
}
