// Package dynamo keeps learned shapes (shared/observed) in the ledger
// table as table.Shape items, one per observed.Identity: a consistent
// GetItem projecting table.ShapeRead, and an UpdateItem conditional on the
// version read (or on no item), naming table.ShapeUpdated only
// (docs/declarations.md, "Observed shapes"). A tool function's
// dispatcher reads and updates through a Store (shared/dispatch, Deps
// Shapes). Nothing here logs, and no error holds a shape or a value.
package dynamo
