package receiver

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
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
	// sealed is sealedDigest of the sealed secrets it was read with.
	sealed string
}

// sealedDigest is a digest of a source's sealed secrets as read (each
// one's ciphertext, nonce, encrypted key, key id and retires_at), and its
// scheme and body bound: another digest means the source was rotated,
// retired, or removed and added again, since every sealing draws its own
// nonce and data key.
func sealedDigest(src store.Source) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(src.Scheme))
	field([]byte(strconv.Itoa(src.MaxBodyBytes)))
	for _, sec := range src.Secrets {
		field(sec.Sealed.Ciphertext)
		field(sec.Sealed.Nonce)
		field(sec.Sealed.EncryptedKey)
		field([]byte(sec.Sealed.KeyID))
		field([]byte(sec.RetiresAt.UTC().Format(time.RFC3339Nano)))
	}
	return hex.EncodeToString(h.Sum(nil))
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
// the cache while its entry lasts (cached true), else loaded (and kept).
func (c *sourceCache) get(ctx context.Context, name string, now time.Time) (s *source, cached bool, err error) {
	c.mu.Lock()
	if s, ok := c.known[name]; ok && now.Before(s.until) {
		c.mu.Unlock()
		return s, true, nil
	}
	if until, ok := c.unknown[name]; ok && now.Before(until) {
		c.mu.Unlock()
		return nil, true, nil
	}
	c.mu.Unlock()
	s, err = c.load(ctx, name, now)
	if err != nil {
		return nil, false, err
	}
	return c.keep(name, s, now), false, nil
}

// forget drops the cache's entry of source name, if it is still old.
func (c *sourceCache) forget(name string, old *source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known[name] == old {
		delete(c.known, name)
	}
}

// keep caches s (nil: name is no source) and returns it.
func (c *sourceCache) keep(name string, s *source, now time.Time) *source {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == nil {
		delete(c.known, name)
		makeRoom(c.unknown, MaxCachedUnknown, now, func(u time.Time) time.Time { return u })
		c.unknown[name] = now.Add(UnknownSourceCache)
		return nil
	}
	delete(c.unknown, name)
	makeRoom(c.known, MaxCachedSources, now, func(s *source) time.Time { return s.until })
	c.known[name] = s
	return s
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
	s := &source{scheme: scheme, maxBody: src.MaxBodyBytes, until: now.Add(h.c.SecretCache), sealed: sealedDigest(src)}
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

// unchanged reports whether source name, read now, still has the sealed
// secrets (and scheme and body bound) cached holds: false when it was
// rotated, retired, removed, or removed and added again.
func (h *Handler) unchanged(ctx context.Context, name string, cached *source) (bool, error) {
	src, err := h.c.Store.SourceSecrets(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read source %s: %w", name, err)
	}
	return sealedDigest(src) == cached.sealed, nil
}
