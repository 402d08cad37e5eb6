package request

import (
	"context"

	"github.com/toolgate/toolgate/shared/review"
)

// EmitRequested is emitRequested, for the webhook tests.
func (h *Handler) EmitRequested(ctx context.Context, r *review.Review) error {
	return h.emitRequested(ctx, r)
}

// Notice is notice, for the notice tests.
func (h *Handler) Notice(ctx context.Context, r *review.Review, notify []string) {
	h.notice(ctx, r, notify)
}
