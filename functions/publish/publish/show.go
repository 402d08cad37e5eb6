package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ShowRequest is one read of a registered toolset through the publish
// function (`toolgate toolset show` and `diff`, for an id no lock holds).
type ShowRequest struct {
	// ID is the toolset id (tool.ToolsetIDPattern).
	ID string
	// Proof is bound to caller.ActionShowToolset and ID (publishapi.ShowBinding).
	Proof string
}

// ShowToolset returns registered toolset req.ID to the caller its proof
// proves. The item is loaded as every loader loads it
// (ledger.Store.Toolset: the stored body must be exactly the RFC 8785 form
// of a toolset, and pass the registration check, toolset.Verify), so the
// body returned is byte for byte the one stored. An id that is not one is
// publishapi.CodeInvalid; a toolset not registered in the stage publishapi.CodeNotFound; an
// item the check refuses publishapi.CodeRefused, naming the rule.
func (s *Service) ShowToolset(ctx context.Context, req ShowRequest) (*publishapi.ShowResult, error) {
	who, ts, err := s.shown(ctx, req, publishapi.ShowBinding(req.ID))
	if err != nil {
		return nil, err
	}
	// ParseStored accepted the body only as exactly ts.Canonical().
	body, err := ts.Canonical()
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be encoded", Err: err}
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "toolset shown", "toolset_id", ts.ID, "reader", who.Principal)
	}
	return &publishapi.ShowResult{ToolsetID: ts.ID, Body: string(body)}, nil
}

// shown loads registered toolset req.ID for the caller whose proof proves
// binding, as ShowToolset and ShowShapes read it: an id that is not one is
// publishapi.CodeInvalid; a refused proof is verify's error; a toolset not
// registered in the stage publishapi.CodeNotFound; an item the
// registration check refuses publishapi.CodeRefused, naming the rule; a
// failed read publishapi.CodeUnavailable.
func (s *Service) shown(ctx context.Context, req ShowRequest, binding caller.Binding) (caller.Identity, *toolset.Toolset, error) {
	var none caller.Identity
	if !tool.ToolsetIDPattern.MatchString(req.ID) {
		return none, nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("%.40q is not a toolset id (%s)", req.ID, tool.ToolsetIDPattern)}
	}
	who, err := s.verify(ctx, req.Proof, binding)
	if err != nil {
		return none, nil, err
	}
	ts, err := s.Store.Toolset(ctx, req.ID)
	var refusal *toolset.Refusal
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return none, nil, &Error{Code: publishapi.CodeNotFound, Message: fmt.Sprintf("toolset %s is not registered in stage %s", req.ID, s.Stage)}
	case errors.As(err, &refusal):
		return none, nil, &Error{Code: publishapi.CodeRefused, Message: err.Error()}
	case err != nil:
		return none, nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be read", Err: err}
	}
	return who, ts, nil
}
