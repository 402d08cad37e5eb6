package ledger

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ToolsetCache is what a function that uses toolsets (the dispatcher,
// review-request) loads them through: Store.Toolset, which runs the
// registration check on every load, and a per-container cache of the
// toolsets that passed (they are immutable). The zero value is ready.
type ToolsetCache struct {
	m sync.Map // id -> *toolset.Toolset
}

// ToolsetReader reads a registered toolset, checked again as registration
// checks it (Store.Toolset, whose errors it returns).
type ToolsetReader interface {
	Toolset(ctx context.Context, id string) (*toolset.Toolset, error)
}

// Load returns toolset id, read through s (a Store), or a *tool.Error: TOOL_PERMISSION_DENIED for a
// toolset that is not registered, or is refused (with one "toolset
// refused" log line naming it and the rule it breaks, for the
// toolset-refused alarm); TOOL_UPSTREAM_UNAVAILABLE when the ledger
// fails. Only a toolset that passed is cached.
func (c *ToolsetCache) Load(ctx context.Context, s ToolsetReader, id string, log *slog.Logger) (*toolset.Toolset, error) {
	if ts, ok := c.m.Load(id); ok {
		return ts.(*toolset.Toolset), nil
	}
	ts, err := s.Toolset(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, tool.Errorf(tool.PermissionDenied, "toolset %s is not registered", id)
	case toolset.LogRefusal(ctx, log, err):
		return nil, tool.Errorf(tool.PermissionDenied, "%s", err.Error())
	case err != nil:
		return nil, tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable")
	}
	c.m.Store(id, ts)
	return ts, nil
}
