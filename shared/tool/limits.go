package tool

// Limits of the contract, with their sources: the resolver checks them at
// compile time, the dispatcher and review-request at run time, from these
// constants only.
const (
	// MaxAttempts caps the attempts per idempotency key, the first
	// included (docs/design.md, "The tool contract"): the resolver's bound on
	// a step's retry, the catalog's and a toolset's bound on a tool's
	// pinned retry, and the ledger's cap.
	MaxAttempts = 10
	// DefaultInlineLimit bounds a tool's result returned inline, in bytes.
	// Step Functions limits a whole execution's state to 256 KiB (AWS
	// quota) and every step's result accumulates in it.
	DefaultInlineLimit = 64 << 10
	// MaxInlineLimit is the largest configurable inline limit, in bytes.
	MaxInlineLimit = 200 << 10
	// MaxMessageBytes bounds an error message a function returns (Edge cuts
	// longer ones at a character boundary): the state data keeps it in a
	// Catch's Cause, and the resolver bounds the state with it.
	MaxMessageBytes = 4 << 10
	// MaxReviewTimeout is the longest review, in seconds: a task token
	// lives at most a year (Step Functions Standard maximum duration).
	MaxReviewTimeout = 31_536_000
)
