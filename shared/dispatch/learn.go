package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/observed"
)

// Shapes is the store of learned result shapes (shared/observed/dynamo's
// Store, on table.Shape items; docs/declarations.md, "Observed shapes").
type Shapes interface {
	// Get reads the shape learned under id and its version: a nil shape
	// and version 0 when there is none.
	Get(ctx context.Context, id observed.Identity) (*observed.Shape, int64, error)
	// Put writes shape under id as version read+1, adding learned to the
	// item's count of results, conditional on the version read (no item
	// when read is 0); false when the condition failed.
	Put(ctx context.Context, id observed.Identity, shape *observed.Shape, read, learned int64) (bool, error)
}

// Bounds of learning (docs/declarations.md, "Observed shapes").
const (
	// LearnTimeout bounds a call's learning, its read and its write
	// together: the answer is already decided, and the function returns
	// it once learning ends or gives up. Never past the invocation's own
	// deadline less learnDeadlineMargin: a call with less left learns
	// nothing.
	LearnTimeout = 50 * time.Millisecond
	// learnDeadlineMargin is kept from the invocation's deadline.
	learnDeadlineMargin = 200 * time.Millisecond
	// MaxLearnedIdentities bounds the shapes a container keeps in memory
	// (one per identity: per host for structured-data-fetch and http);
	// past it the cache is emptied and each identity read again at its
	// next use.
	MaxLearnedIdentities = 256
)

// learner is a container's memory of the shapes it learned: what it last
// read or wrote per identity key, so that a result that adds nothing
// costs no request.
type learner struct {
	store Shapes
	// mu holds the cache during one call's learning (a Lambda container
	// runs one invocation at a time; tests run several).
	mu    sync.Mutex
	known map[string]*learnedShape
}

// learnedShape is one identity's shape as the store last held it.
type learnedShape struct {
	shape   *observed.Shape // nil: no item
	version int64
	// unwritten counts the results learned since this container last
	// wrote the item: the next write adds it to learned_from.
	unwritten int64
}

// learnTarget is what a successful call's result teaches and under which
// identity: a catalog structured-data-fetch or http call's data member,
// keyed by the request's host; a tool without an output schema's whole
// result (the identity: toolset.Tool.ShapeIdentity, which the publish
// function reading shapes shares). Any other call (a declared output schema and no open subtree,
// a call with keep, whose result is not the whole) learns nothing and
// reads nothing.
func (inv *invocation) learnTarget(out json.RawMessage) (observed.Identity, json.RawMessage, bool) {
	id, perHost, learns := inv.pinned.ShapeIdentity(inv.env.Tool)
	if !learns || len(inv.env.Keep) > 0 {
		return id, nil, false
	}
	if perHost {
		var in struct {
			URL string `json:"url"`
		}
		var res struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(inv.ranInput, &in) != nil || json.Unmarshal(out, &res) != nil || len(res.Data) == 0 {
			return id, nil, false
		}
		u, err := url.Parse(in.URL)
		if err != nil || u.Host == "" {
			return id, nil, false
		}
		id.Host = strings.ToLower(u.Host)
		return id, res.Data, true
	}
	return id, out, true
}

// learn learns the shape of o's result after its record is written,
// when o is a success of a call that teaches one (learnTarget): never a
// replay, a reuse, a refusal or a failure. It never changes the call's
// answer. Bounded by LearnTimeout: the first use of an identity in the
// container reads its item (one GetItem); a result that adds nothing to
// the shape known writes nothing; one that adds something writes it (one
// UpdateItem conditional on the version read). A failed read or write, a
// condition that failed (another container wrote first) or a panic drops
// the update: it is logged with the tool and an error class only (never
// the shape, a value or an error's text), and the identity is read again
// at its next use.
func (inv *invocation) learn(ctx context.Context, o *outcome) {
	d := inv.d
	if d.shapes == nil || o.write != writeFinish || o.err != nil || o.status != ledger.StatusSucceeded || o.reusedFrom != "" {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.log.WarnContext(ctx, "shape not learned", "tool", inv.env.Tool, "error_class", "panic")
		}
	}()
	id, result, ok := inv.learnTarget(o.result)
	if !ok {
		return
	}
	bound := time.Now().Add(LearnTimeout)
	if dl, ok := ctx.Deadline(); ok {
		if dl = dl.Add(-learnDeadlineMargin); dl.Before(bound) {
			bound = dl
		}
	}
	if !time.Now().Before(bound) {
		return
	}
	lctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), bound)
	defer cancel()
	if class := d.shapes.learn(lctx, id, result); class != "" {
		d.log.WarnContext(ctx, "shape not learned", "tool", inv.env.Tool, "error_class", class)
	}
}

// learn merges result's shape into the one known under id, reading it at
// the identity's first use and writing it when it changed, and returns
// "" or the class of what dropped the update: result (not JSON), read,
// bad-item, conflict, write or timeout.
func (l *learner) learn(ctx context.Context, id observed.Identity, result json.RawMessage) string {
	seen, err := observed.Observe(result)
	if err != nil {
		return "result"
	}
	key := id.Key()
	l.mu.Lock()
	defer l.mu.Unlock()
	known := l.known[key]
	if known == nil {
		shape, version, err := l.store.Get(ctx, id)
		if err != nil {
			return errorClass(ctx, err, "read")
		}
		if len(l.known) >= MaxLearnedIdentities {
			clear(l.known)
		}
		known = &learnedShape{shape: shape, version: version}
		l.known[key] = known
	}
	known.unwritten++
	merged := known.shape.Clone()
	if merged == nil {
		merged = &observed.Shape{}
	}
	if !merged.Merge(seen) {
		return ""
	}
	stored, err := l.store.Put(ctx, id, merged, known.version, known.unwritten)
	switch {
	case err != nil:
		delete(l.known, key)
		return errorClass(ctx, err, "write")
	case !stored:
		delete(l.known, key)
		return "conflict"
	}
	known.shape, known.version, known.unwritten = merged, known.version+1, 0
	return ""
}

// errorClass names what failed: timeout when ctx ended, bad-item for an
// item whose shape does not read (observed.ErrBadItem), else what.
func errorClass(ctx context.Context, err error, what string) string {
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, observed.ErrBadItem):
		return "bad-item"
	}
	return what
}
