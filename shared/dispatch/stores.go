package dispatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Ledger is the part of the ledger store (shared/ledger's Store, on the
// DynamoDB table of docs/ledger.md) the dispatcher uses: the run's pinned
// toolset, the call's item (claim, reclaim, finish, release, a replay's
// read) and the ToolInvocation rows. Each method's requests, conditions
// and errors are ledger.Store's.
type Ledger interface {
	// Sealed reports whether the store seals every state it writes on a
	// call item with the function's own key and checks every record it
	// reads (ledger.Store.WithMAC); New refuses a store that does not.
	Sealed() bool
	// Now is the store's clock.
	Now() time.Time
	Toolset(ctx context.Context, id string) (*toolset.Toolset, error)
	Claim(ctx context.Context, r *ledger.Record) (claimed bool, existing *ledger.Record, err error)
	Reclaim(ctx context.Context, old *ledger.Record, lease time.Time) (bool, error)
	MarkUnknown(ctx context.Context, old *ledger.Record, code string) (bool, error)
	Finish(ctx context.Context, key, token string, state ledger.State, result json.RawMessage, row *ledger.Row) (bool, error)
	Release(ctx context.Context, key, token, code string, row *ledger.Row) (bool, error)
	Touch(ctx context.Context, key string) (*ledger.Record, error)
	PutRow(ctx context.Context, r *ledger.Row) error
	PutKeyPointer(ctx context.Context, opaqueRunID, runID string) error
	// Record, ParentCalls and ClaimReuse serve a fork's calls only
	// (reuse.go): the parent call's record, the parent run's candidate
	// calls and the reuse claim on one of them.
	Record(ctx context.Context, key string) (*ledger.Record, error)
	ParentCalls(ctx context.Context, runID, step, digest string) ([]tool.Seq, error)
	ClaimReuse(ctx context.Context, forkKey string, parentSeq tool.Seq) (bool, error)

	// Reconciliation and FinishReconciled read a call's reconciliation
	// and finish its record by it (reconcile.go; docs/fork.md,
	// "Reconciling"): only for a record whose outcome is unknown.
	Reconciliation(ctx context.Context, key string) (*ledger.Reconciliation, error)
	FinishReconciled(ctx context.Context, old *ledger.Record, rc *ledger.Reconciliation) (bool, error)
}

// Reviews is the part of the review store (shared/review/dynamo's Store)
// the dispatcher checks a gated call's approval with (approval.go).
type Reviews interface {
	// Sealed reports whether Bind seals the binding it writes with the
	// function's own key and checks the one it finds
	// (dynamo.Store.WithMAC); New refuses a store that does not.
	Sealed() bool
	// GetApproval reads a review; review.ErrNotFound when it is gone.
	GetApproval(ctx context.Context, id string) (*review.Review, error)
	// Bind binds an approved review to the idempotency key of the call it
	// authorises with a conditional write: bound is false when another key
	// holds it; cur is the review as stored, its BindingSeal checked.
	Bind(ctx context.Context, r *review.Review, idemKey string) (bound bool, cur *review.Review, err error)
}
