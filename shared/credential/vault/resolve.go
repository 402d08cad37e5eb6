package vault

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
)

// maxCacheEntries is the size past which a Resolver drops what it no
// longer uses (entries older than CacheTTL), so that a container serving
// many runs keeps a bounded cache.
const maxCacheEntries = 1024

// Resolver resolves credentials at call time, in the order run, end user,
// toolset, the first found used whole; it keeps what it read for CacheTTL
// per (toolset id, target, origin, run, starter, end user), and decrypts
// each stored value (item version) once while it is in use. Safe for
// concurrent use.
type Resolver struct {
	store *Store
	kms   KMS
	now   func() time.Time

	mu      sync.Mutex
	reads   map[readKey]readEntry
	secrets map[secretKey]*secretEntry
}

// readKey is what one Lookup read for.
type readKey struct {
	toolsetID, toolsetName, target, origin, run, starter string
	endUser                                              credential.Scope
}

type readEntry struct {
	at    time.Time
	found Found
}

// secretKey names one stored value as one presentation opens it: its
// binding, version and a digest of its nonce, encrypted data key,
// ciphertext and of the target's auth, so that a credential revoked and set
// again (version 1 again) is never taken for the old one, and a toolset
// declaring another presentation of the same target (another header, a
// path segment) never gets what only Open's GCM check would refuse it.
type secretKey struct {
	toolsetName, target, origin string
	scope                       credential.Scope
	version                     int64
	sealed                      [sha256.Size]byte
}

type secretEntry struct {
	used   time.Time
	secret []byte
}

// NewResolver returns a Resolver reading store and decrypting with k; now
// is its clock (time.Now when nil), for the cache and for expiry.
func NewResolver(store *Store, k KMS, now func() time.Time) *Resolver {
	if now == nil {
		now = time.Now
	}
	return &Resolver{store: store, kms: k, now: now, reads: map[readKey]readEntry{}, secrets: map[secretKey]*secretEntry{}}
}

// Resolve returns the credential req's call presents, or a *tool.Error.
// A target without auth (req.Target.Auth zero) gets none: nil, nil.
//
// It reads (Store.Lookup, or what it read for the same request within
// CacheTTL, unless req.Fresh) the target's credentials at its origin in the run scope (when
// req.RunID is an execution ARN), the end-user scope (when req.EndUser is
// set) and the toolset scope, and the toolset id's marker. The first scope
// in that order holding a usable credential is used whole; a run-scope
// credential is usable only when its execution_arn is req.RunID and its
// setter req.Starter. Then:
//
//   - none: TOOL_PERMISSION_DENIED naming the target and the scopes tried;
//   - the toolset id not allowed (no marker, or one without allowed_by):
//     TOOL_PERMISSION_DENIED saying so and how to allow it;
//   - expired (credential_expires_at at or before now): CALL_PARKED, the
//     message starting with credential.CauseExpired and naming the scope kind and
//     the target, its Err a *park.Detail naming the target and the scope;
//   - a read or a decryption failing: TOOL_INTERNAL, the cause kept in Err.
//
// No message holds a credential's value.
func (r *Resolver) Resolve(ctx context.Context, req credential.Request) (*credential.Credential, error) {
	t := req.Target
	if t.Auth == (credential.Target{}).Auth {
		return nil, nil
	}
	var run credential.Scope
	if name := executionName(req.RunID); name != "" {
		run = credential.RunScope(name)
		if credential.ParseScope(string(run)) != nil {
			run = ""
		}
	}
	f, err := r.lookup(ctx, req, run)
	if err != nil {
		return nil, tool.Wrap(tool.Internal, err, "the credentials of target %s could not be read", t.Name)
	}
	tried := []string{credential.KindToolset}
	if req.EndUser != "" {
		tried = append([]string{credential.KindEndUser}, tried...)
	}
	if run != "" {
		tried = append([]string{credential.KindRun}, tried...)
	}
	var use *stored
	switch {
	case f.Run != nil && f.Run.ExecutionARN == req.RunID && f.Run.SetBy == req.Starter && req.Starter != "":
		use = f.Run
	case f.EndUser != nil:
		use = f.EndUser
	case f.Toolset != nil:
		use = f.Toolset
	default:
		return nil, tool.Errorf(tool.PermissionDenied, "target %s (%s) of toolset %s needs a credential and none is set for it: scopes tried %s",
			t.Name, t.Origin, t.ToolsetName, strings.Join(tried, ", "))
	}
	if !f.Allowed {
		return nil, tool.Errorf(tool.PermissionDenied, "toolset id %s is not allowed the credentials of target %s (%s) of toolset %s; a credentials admin runs `toolgate credentials allow --toolset %s`",
			req.ToolsetID, t.Name, t.Origin, t.ToolsetName, req.ToolsetID)
	}
	now := r.now()
	if !use.ExpiresAt.IsZero() && !use.ExpiresAt.After(now) {
		// The row's detail names the target and the scope, never the value
		// (docs/parking.md, "The PARKED row").
		return nil, tool.Wrap(tool.CallParked, &park.Detail{Cause: park.CredentialsExpired, Target: t.Name, Scope: string(use.Scope)},
			"%s: the %s-scope credential of target %s (%s) of toolset %s expired at %s; the call was not sent",
			credential.CauseExpired, use.Scope.Kind(), t.Name, t.Origin, t.ToolsetName, use.ExpiresAt.UTC().Format(time.RFC3339))
	}
	secret, err := r.open(ctx, t, use, now)
	if err != nil {
		return nil, tool.Wrap(tool.Internal, err, "the %s-scope credential of target %s could not be decrypted", use.Scope.Kind(), t.Name)
	}
	return credential.Opened(t, use.Scope, use.Version, use.ExpiresAt, secret), nil
}

// lookup is Store.Lookup for req, or what it returned within CacheTTL
// unless req.Fresh; a fresh read is kept for the requests after it.
func (r *Resolver) lookup(ctx context.Context, req credential.Request, run credential.Scope) (Found, error) {
	t := req.Target
	k := readKey{toolsetID: req.ToolsetID, toolsetName: t.ToolsetName, target: t.Name, origin: t.Origin,
		run: req.RunID, starter: req.Starter, endUser: req.EndUser}
	now := r.now()
	r.mu.Lock()
	e, ok := r.reads[k]
	r.mu.Unlock()
	if ok && !req.Fresh && now.Sub(e.at) < CacheTTL && !now.Before(e.at) {
		return e.found, nil
	}
	f, err := r.store.Lookup(ctx, t, req.ToolsetID, run, req.EndUser)
	if err != nil {
		return Found{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reads) >= maxCacheEntries {
		for k, e := range r.reads {
			if now.Sub(e.at) >= CacheTTL {
				delete(r.reads, k)
			}
		}
	}
	r.reads[k] = readEntry{at: now, found: f}
	return f, nil
}

// open is Open of st, or the plaintext it gave for the same stored value.
// The returned slice is the credential.Credential's own copy.
func (r *Resolver) open(ctx context.Context, t credential.Target, st *stored, now time.Time) ([]byte, error) {
	h := sha256.New()
	h.Write(st.Sealed.Nonce)
	h.Write(st.Sealed.EncryptedKey)
	h.Write(st.Sealed.Ciphertext)
	auth, err := json.Marshal(t.Auth)
	if err != nil {
		return nil, err
	}
	h.Write(auth)
	k := secretKey{toolsetName: t.ToolsetName, target: t.Name, origin: t.Origin, scope: st.Scope, version: st.Version}
	h.Sum(k.sealed[:0])
	r.mu.Lock()
	if e, ok := r.secrets[k]; ok {
		e.used = now
		out := append([]byte(nil), e.secret...)
		r.mu.Unlock()
		return out, nil
	}
	r.mu.Unlock()
	secret, err := Open(ctx, r.kms, t, st.Scope, st.Sealed)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.secrets) >= maxCacheEntries {
		for k, e := range r.secrets {
			if now.Sub(e.used) >= CacheTTL {
				clear(e.secret)
				delete(r.secrets, k)
			}
		}
	}
	r.secrets[k] = &secretEntry{used: now, secret: secret}
	return append([]byte(nil), secret...), nil
}
