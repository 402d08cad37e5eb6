package toolset

import (
	"context"
	"errors"
	"log/slog"
)

// LogRefusal writes the one JSON line a function logs when it refuses a
// stored toolset: level ERROR, msg RefusedLogMessage, toolset_id, rule and
// reason (tool names and rules only, never inputs). It reports whether err
// is a *Refusal; other errors are not logged here.
func LogRefusal(ctx context.Context, log *slog.Logger, err error) bool {
	var ref *Refusal
	if !errors.As(err, &ref) {
		return false
	}
	log.ErrorContext(ctx, RefusedLogMessage, "toolset_id", ref.ToolsetID, "rule", ref.Rule, "reason", ref.Reason)
	return true
}
