package receiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// source is what the receiver keeps of a source: its scheme, body bound
// and opened secrets, until a time.
type source struct {
	scheme  inbound.Scheme
	maxBody int
	secrets []openedSecret
	until   time.Time
}

// openedSecret is one secret of a source, opened, and when it retires
// (zero: it is current).
type openedSecret struct {
	value     string
	retiresAt time.Time
}

// secretsAt are the secrets that verify at now: the current ones and
// those whose retires_at is still ahead (docs/webhooks.md, rotation).
func (s *source) secretsAt(now time.Time) []string {
	var out []string
	for _, k := range s.secrets {
		if k.retiresAt.IsZero() || now.Before(k.retiresAt) {
			out = append(out, k.value)
		}
	}
	return out
}

// sourceCache keeps, per container, known sources for SecretCache and
// unknown names for UnknownSourceCache, each map bounded in entries
// (MaxCachedSources, MaxCachedUnknown). Concurrent misses of one name may
// each load it; the last to finish is kept.
type sourceCache struct {
	load func(ctx context.Context, name string, now time.Time) (*source, error)

	mu      sync.Mutex
	known   map[string]*source
	unknown map[string]time.Time // name -> until
}

func newSourceCache(load func(ctx context.Context, name string, now time.Time) (*source, error)) *sourceCache {
	return &sourceCache{load: load, known: map[string]*source{}, unknown: map[string]time.Time{}}
}

// get returns the source name at now, nil when it does not exist, from
// the cache while its entry lasts, else loaded (and kept).
func (c *sourceCache) get(ctx context.Context, name string, now time.Time) (*source, error) {
	c.mu.Lock()
	if s, ok := c.known[name]; ok && now.Before(s.until) {
		c.mu.Unlock()
		return s, nil
	}
	if until, ok := c.unknown[name]; ok && now.Before(until) {
		c.mu.Unlock()
		return nil, nil
	}
	c.mu.Unlock()
	s, err := c.load(ctx, name, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == nil {
		delete(c.known, name)
		makeRoom(c.unknown, MaxCachedUnknown, now, func(u time.Time) time.Time { return u })
		c.unknown[name] = now.Add(UnknownSourceCache)
		return nil, nil
	}
	delete(c.unknown, name)
	makeRoom(c.known, MaxCachedSources, now, func(s *source) time.Time { return s.until })
	c.known[name] = s
	return s, nil
}

// makeRoom drops m's entries that ended by now and, when m still holds
// max entries, the one that ends first, so one more fits.
func makeRoom[V any](m map[string]V, max int, now time.Time, until func(V) time.Time) {
	if len(m) < max {
		return
	}
	first, firstUntil := "", time.Time{}
	for k, v := range m {
		u := until(v)
		if !now.Before(u) {
			delete(m, k)
			continue
		}
		if first == "" || u.Before(firstUntil) {
			first, firstUntil = k, u
		}
	}
	if len(m) >= max {
		delete(m, first)
	}
}

// load reads source name from the store and opens its secrets that have
// not retired by now: nil for a source that does not exist. Errors name
// the source, never a byte of a secret.
func (h *Handler) load(ctx context.Context, name string, now time.Time) (*source, error) {
	src, err := h.c.Store.SourceSecrets(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read source %s: %w", name, err)
	}
	scheme, err := inbound.ParseScheme(src.Scheme)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", name, err)
	}
	s := &source{scheme: scheme, maxBody: src.MaxBodyBytes, until: now.Add(h.c.SecretCache)}
	switch {
	case s.maxBody <= 0:
		s.maxBody = inboundapi.DefaultMaxBodyBytes
	case s.maxBody > HardMaxBodyBytes:
		s.maxBody = HardMaxBodyBytes
	}
	for _, sec := range src.Verifying(now) {
		b, err := h.c.Open(ctx, name, sec.Sealed)
		if err != nil {
			return nil, fmt.Errorf("open a secret of source %s: %w", name, err)
		}
		s.secrets = append(s.secrets, openedSecret{value: string(b), retiresAt: sec.RetiresAt})
	}
	return s, nil
}
