package request

import (
	"context"

	"github.com/toolgate/toolgate/shared/review"
)

// EmitRequested is emitRequested, for the webhook tests.
func (h *Handler) EmitRequested(ctx context.Context, r *review.Review) error {
	return h.emitRequested(ctx, r)
}
