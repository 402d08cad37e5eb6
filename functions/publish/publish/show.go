package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ShowRequest is one read of a registered toolset through the publish
// function (`toolgate toolset show` and `diff`, for an id no lock holds).
type ShowRequest struct {
	// ID is the toolset id (toolset.IDPattern).
	ID string
	// Proof is bound to caller.ActionShowToolset and ID (ShowBinding).
	Proof string
}

// ShowResult is a read's answer: the registered toolset as the ledger
// table's item holds it.
type ShowResult struct {
	ToolsetID string `json:"toolset_id"`
	// Body is the item's body exactly as stored: the RFC 8785 form of the
	// toolset without its id (toolset.Canonical), whose SHA-256 the id
	// names. A reader parses it with toolset.ParseStored and checks that
	// it digests to the id it asked for.
	Body string `json:"body"`
}

// ShowBinding is the caller proof binding of a read of toolset id.
func ShowBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionShowToolset, Target: id}
}

// ShowToolset returns registered toolset req.ID to the caller its proof
// proves. The item is loaded as every loader loads it
// (ledger.Store.Toolset: the stored body must be exactly the RFC 8785 form
// of a toolset, and pass the registration check, toolset.Verify), so the
// body returned is byte for byte the one stored. An id that is not one is
// CodeInvalid; a toolset not registered in the stage CodeNotFound; an
// item the check refuses CodeRefused, naming the rule.
func (s *Service) ShowToolset(ctx context.Context, req ShowRequest) (*ShowResult, error) {
	if !toolset.IDPattern.MatchString(req.ID) {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("%.40q is not a toolset id (%s)", req.ID, toolset.IDPattern)}
	}
	who, err := s.verify(ctx, req.Proof, ShowBinding(req.ID))
	if err != nil {
		return nil, err
	}
	ts, err := s.Store.Toolset(ctx, req.ID)
	var refusal *toolset.Refusal
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("toolset %s is not registered in stage %s", req.ID, s.Stage)}
	case errors.As(err, &refusal):
		return nil, &Error{Code: CodeRefused, Message: err.Error()}
	case err != nil:
		return nil, &Error{Code: CodeUnavailable, Message: "the toolset could not be read", Err: err}
	}
	// ParseStored accepted the body only as exactly ts.Canonical().
	body, err := ts.Canonical()
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the toolset could not be encoded", Err: err}
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "toolset shown", "toolset_id", ts.ID, "reader", who.Principal)
	}
	return &ShowResult{ToolsetID: ts.ID, Body: string(body)}, nil
}
