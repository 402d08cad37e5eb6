package sources

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// Bounds of a source (docs/webhooks.md, "Sources").
const (
	// DefaultMaxBodyBytes is a source's body limit when its add names
	// none (inboundapi.DefaultMaxBodyBytes, 64 KiB).
	DefaultMaxBodyBytes = inboundapi.DefaultMaxBodyBytes
	// MaxBodyBytes is the most a source may allow: the receiver's hard
	// cap (inboundapi.MaxBodyBytes, 200 KiB), checked before any look-up.
	MaxBodyBytes = inboundapi.MaxBodyBytes
	// MaxSources bounds the sources: the table keeps all of them in one
	// partition, read by one Query, and list answers them in one Function
	// URL answer.
	MaxSources = 100
	// MaxSecrets bounds a source's secrets: the current one and those a
	// rotation left signing until they retire. A rotation that would keep
	// more is refused (retire-secrets first).
	MaxSecrets = 5
	// RotationGrace is how long the previous secrets keep verifying after
	// a rotation: 24 hours, time to move the provider to the new secret.
	RotationGrace = 24 * time.Hour
)

// rotateInterval is the least time between two rotations of one source's
// secret: the time a caller proof is admitted (caller.Window after its
// signing, caller.Skew before it) and a second for the whole seconds its
// signing time and the secret's created_at are kept in. The verifier
// admits a proof again for the binding it was first used for (docs/
// identity.md), so a rotate-secret proof replayed within that time would
// rotate once more and answer a new drawn secret to whoever replayed it;
// a rotation this soon after the last is refused instead.
const rotateInterval = caller.Window + caller.Skew + time.Second

// AddSource adds source r.Name for an inbound operator whose proof is
// bound to r (inboundapi.AddSourceBinding): the name inbound.CheckName's,
// the scheme inbound.ParseScheme's, the Solution published, max_body_bytes
// 1 to MaxBodyBytes (0: DefaultMaxBodyBytes), the end user enduser.CheckID's
// when set. A given secret must be in the scheme's form (CheckSecret);
// none: one is drawn (DrawSecret; Stripe requires one) and answered this
// once. The secret is stored only sealed (Seal). A name in use is
// SOURCES_CONFLICT, also for the same proof presented again, which so
// draws and answers no second secret.
func (s *Service) AddSource(ctx context.Context, r inboundapi.AddSourceRequest, proof string) (*inboundapi.AddSourceResult, error) {
	if err := checkName("name", r.Name); err != nil {
		return nil, err
	}
	scheme, err := inbound.ParseScheme(r.Scheme)
	if err != nil {
		return nil, invalid("scheme %.40q: want standard-webhooks, stripe or github", r.Scheme)
	}
	maxBody := r.MaxBodyBytes
	switch {
	case maxBody == 0:
		maxBody = DefaultMaxBodyBytes
	case maxBody < 1 || maxBody > MaxBodyBytes:
		return nil, invalid("max_body_bytes must be 1 to %d (the receiver's hard cap)", MaxBodyBytes)
	}
	if err := checkEndUser(r.EndUser); err != nil {
		return nil, err
	}
	if r.Secret != "" {
		if err := CheckSecret(scheme, r.Secret); err != nil {
			return nil, invalid("secret: %v", err)
		}
	} else if scheme == inbound.Stripe {
		return nil, invalid("secret: %v", ErrSecretRequired)
	}
	who, err := s.authorize(ctx, proof, inboundapi.AddSourceBinding(r))
	if err != nil {
		return nil, err
	}
	if _, err := s.published(ctx, r.Solution); err != nil {
		return nil, err
	}
	all, err := s.Store.Sources(ctx)
	if err != nil {
		return nil, unavailable("the sources could not be read", err)
	}
	for _, src := range all {
		if src.Name == r.Name {
			return nil, conflict(r.Name)
		}
	}
	if len(all) >= MaxSources {
		return nil, &Error{Code: inboundapi.CodeRefused, Message: fmt.Sprintf("%d sources exist, the most there may be: remove one first (toolgate webhooks source remove)", len(all))}
	}
	secret, drawn := r.Secret, false
	if secret == "" {
		if secret, err = DrawSecret(scheme); err != nil {
			return nil, unavailable("no secret could be drawn", err)
		}
		drawn = true
	}
	sealed, err := s.Seal(ctx, r.Name, []byte(secret))
	if err != nil {
		return nil, unavailable("the secret could not be sealed", err)
	}
	now := s.now()
	src := store.Source{Name: r.Name, Scheme: string(scheme), Solution: r.Solution, EndUser: r.EndUser, AddedBy: who, MaxBodyBytes: maxBody,
		Secrets: []store.Secret{{Sealed: sealed, CreatedAt: now}}, AddedAt: now, UpdatedAt: now, Version: 1}
	if err := s.Store.PutSource(ctx, src); errors.Is(err, store.ErrExists) {
		return nil, conflict(r.Name)
	} else if err != nil {
		return nil, unavailable("the source could not be stored", err)
	}
	s.log().InfoContext(ctx, "inbound source added", "source", r.Name, "scheme", string(scheme), "solution", r.Solution, "secret_drawn", drawn, "by", who)
	res := &inboundapi.AddSourceResult{Source: sourceInfo(src, now)}
	if drawn {
		res.Secret = secret
	}
	return res, nil
}

// conflict is SOURCES_CONFLICT for a source name in use.
func conflict(name string) error {
	return &Error{Code: inboundapi.CodeConflict, Message: fmt.Sprintf("source %s exists already (toolgate webhooks source list): remove it first, or rotate its secret", name)}
}

// sourceInfo is src as a listing shows it at now: never a secret; Secrets
// counts those that verify (not retired at now).
func sourceInfo(src store.Source, now time.Time) inboundapi.SourceInfo {
	out := inboundapi.SourceInfo{Name: src.Name, Scheme: src.Scheme, Solution: src.Solution, MaxBodyBytes: src.MaxBodyBytes, EndUser: src.EndUser,
		Route: inboundapi.ReceiverRoutePrefix + src.Name, AddedBy: src.AddedBy, AddedAt: rfc3339(src.AddedAt), UpdatedAt: rfc3339(src.UpdatedAt), Version: src.Version}
	for _, sec := range src.Secrets {
		if sec.RetiresAt.IsZero() || now.Before(sec.RetiresAt) {
			out.Secrets++
		}
	}
	return out
}

// ListSources lists every source, never a secret.
func (s *Service) ListSources(ctx context.Context, proof string) (*inboundapi.ListSourcesResult, error) {
	if _, err := s.authorize(ctx, proof, inboundapi.ListSourcesBinding()); err != nil {
		return nil, err
	}
	all, err := s.Store.Sources(ctx)
	if err != nil {
		return nil, unavailable("the sources could not be read", err)
	}
	now := s.now()
	out := &inboundapi.ListSourcesResult{Sources: []inboundapi.SourceInfo{}}
	for _, src := range all {
		out.Sources = append(out.Sources, sourceInfo(src, now))
	}
	return out, nil
}

// source reads source name, or answers NOT_FOUND.
func (s *Service) source(ctx context.Context, name string) (store.Source, error) {
	src, err := s.Store.Source(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return src, &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("no source %s (toolgate webhooks source list)", name)}
	case err != nil:
		return src, unavailable("the source could not be read", err)
	}
	return src, nil
}

// RotateSecret gives source name a new secret: r.Secret, in the scheme's
// form, or one drawn (not for Stripe) and answered this once. The
// secrets that verified until now keep verifying for RotationGrace
// (their retires_at), so that the provider can move to the new one
// without a refused delivery; those retired already are dropped. A
// rotation less than rotateInterval after the current secret was made
// is SOURCES_REFUSED (it could be its proof replayed), and so is one that
// would keep more than MaxSecrets. The write is conditional on the
// source's version: one changed meanwhile is SOURCES_CONFLICT. The
// rotator joins the source's secret_holders in the same write
// (store.HeldBy): four eyes refuse it as an approver of the source's
// runs (docs/identity.md, "Four eyes").
func (s *Service) RotateSecret(ctx context.Context, name string, r inboundapi.RotateSecretRequest, proof string) (*inboundapi.RotateSecretResult, error) {
	if err := checkName("name", name); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, inboundapi.RotateSecretBinding(name, r))
	if err != nil {
		return nil, err
	}
	src, err := s.source(ctx, name)
	if err != nil {
		return nil, err
	}
	scheme := inbound.Scheme(src.Scheme)
	if r.Secret != "" {
		if err := CheckSecret(scheme, r.Secret); err != nil {
			return nil, invalid("secret: %v", err)
		}
	} else if scheme == inbound.Stripe {
		return nil, invalid("secret: %v", ErrSecretRequired)
	}
	now := s.now()
	if at, ok := currentSince(src); ok && now.Before(at.Add(rotateInterval)) {
		return nil, &Error{Code: inboundapi.CodeRefused, Message: fmt.Sprintf("the secret of %s was made at %s, less than %s ago, within a proof's validity: "+
			"the same rotate-secret proof could rotate it again; rotate after %s", name, rfc3339(at), rotateInterval, rfc3339(at.Add(rotateInterval)))}
	}
	var next []store.Secret
	retires := now.Add(RotationGrace)
	for _, sec := range src.Secrets {
		switch {
		case sec.RetiresAt.IsZero():
			sec.RetiresAt = retires
		case !now.Before(sec.RetiresAt):
			continue // retired: it verifies nothing any more
		}
		next = append(next, sec)
	}
	if len(next)+1 > MaxSecrets {
		return nil, &Error{Code: inboundapi.CodeRefused, Message: fmt.Sprintf("%s would keep %d secrets, over %d: retire the previous ones first (toolgate webhooks source retire-secrets)", name, len(next)+1, MaxSecrets)}
	}
	secret, drawn := r.Secret, false
	if secret == "" {
		if secret, err = DrawSecret(scheme); err != nil {
			return nil, unavailable("no secret could be drawn", err)
		}
		drawn = true
	}
	sealed, err := s.Seal(ctx, name, []byte(secret))
	if err != nil {
		return nil, unavailable("the secret could not be sealed", err)
	}
	next = append(next, store.Secret{Sealed: sealed, CreatedAt: now})
	// The rotator is answered the new secret, or gave it: it holds one
	// now, and four eyes refuse it as an approver of the source's runs.
	if err := s.Store.UpdateSecretsHeldBy(ctx, name, next, store.HeldBy(src.SecretHolders, who), src.Version, now); err != nil {
		return nil, updateFailed(name, err)
	}
	s.log().InfoContext(ctx, "inbound source secret rotated", "source", name, "secret_drawn", drawn, "by", who)
	res := &inboundapi.RotateSecretResult{Source: name, PreviousRetiresAt: rfc3339(retires)}
	if drawn {
		res.Secret = secret
	}
	return res, nil
}

// updateFailed is the answer to a failed version-conditional write of
// source name's secrets.
func updateFailed(name string, err error) error {
	switch {
	case errors.Is(err, store.ErrConflict):
		return &Error{Code: inboundapi.CodeConflict, Message: fmt.Sprintf("source %s changed meanwhile: repeat the request", name)}
	case errors.Is(err, store.ErrNotFound):
		return &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("source %s was removed meanwhile", name)}
	}
	return unavailable("the secrets could not be written", err)
}

// currentSince is when src's current secret (the last without a
// retires_at) was made; false when it has none or its time is unknown.
func currentSince(src store.Source) (time.Time, bool) {
	for i := len(src.Secrets) - 1; i >= 0; i-- {
		if sec := src.Secrets[i]; sec.RetiresAt.IsZero() {
			return sec.CreatedAt, !sec.CreatedAt.IsZero()
		}
	}
	return time.Time{}, false
}

// RetireSecrets drops every secret of source name but the newest, now:
// once the provider signs with the new secret, the previous ones need
// not wait for their retires_at. Conditional on the source's version.
func (s *Service) RetireSecrets(ctx context.Context, name, proof string) (*inboundapi.RetireSecretsResult, error) {
	if err := checkName("name", name); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, inboundapi.RetireSecretsBinding(name))
	if err != nil {
		return nil, err
	}
	src, err := s.source(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(src.Secrets) <= 1 {
		return &inboundapi.RetireSecretsResult{Source: name}, nil
	}
	newest := src.Secrets[len(src.Secrets)-1]
	for _, sec := range src.Secrets {
		if sec.CreatedAt.After(newest.CreatedAt) {
			newest = sec
		}
	}
	newest.RetiresAt = time.Time{}
	if err := s.Store.UpdateSecrets(ctx, name, []store.Secret{newest}, src.Version, s.now()); err != nil {
		return nil, updateFailed(name, err)
	}
	s.log().InfoContext(ctx, "inbound source secrets retired", "source", name, "retired", len(src.Secrets)-1, "by", who)
	return &inboundapi.RetireSecretsResult{Source: name, Retired: len(src.Secrets) - 1}, nil
}

// RemoveSource deletes source name: the receiver answers 401 for it from
// when its cache lets it go (TOOLGATE_INBOUND_SECRET_CACHE), and the
// events of it already queued fail in the consumer ("source removed").
func (s *Service) RemoveSource(ctx context.Context, name, proof string) (*inboundapi.RemoveResult, error) {
	if err := checkName("name", name); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, inboundapi.RemoveSourceBinding(name))
	if err != nil {
		return nil, err
	}
	if err := s.Store.DeleteSource(ctx, name); errors.Is(err, store.ErrNotFound) {
		return nil, &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("no source %s (toolgate webhooks source list)", name)}
	} else if err != nil {
		return nil, unavailable("the source could not be removed", err)
	}
	s.log().InfoContext(ctx, "inbound source removed", "source", name, "by", who)
	return &inboundapi.RemoveResult{Name: name, Removed: true}, nil
}
