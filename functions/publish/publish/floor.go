package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// RuleFloor names a registration refused because a platform tool is
// pinned looser than its function's owners allow, or its function's floor
// cannot be read (docs/tools.md, "Platform tools"). It is the publish
// function's rule, not the registration check's (toolset.Verify): it
// reads the function's tags, which may change after registration, so the
// proxy checks every call against them too.
const RuleFloor = "toolset-floor"

// Floors checks a pinned platform tool against its function's owners'
// floor, read from the function's tags (platformtool.Floors.Admit): nil
// when the pin is at least as strict, otherwise a *tool.Error:
// TOOL_PERMISSION_DENIED for a looser pin, a floor tag with a bad value
// or tags the role may not read; TOOL_INTERNAL for a function that does
// not exist; TOOL_UPSTREAM_UNAVAILABLE when Lambda did not answer.
type Floors interface {
	Admit(ctx context.Context, name string, pinned toolset.Tool, functionARN string) error
}

// strictest is the strictest floor's verdict on a pin, which needs no
// reading: a pin that asks for a review, at most once, and claims neither
// idempotency nor consent to duplicates.
func strictest(p toolset.Tool) bool {
	return p.ReviewRequired && p.Policy != catalog.AtLeastOnce && !p.Idempotent && !p.TolerateDuplicates
}

// checkFloors refuses ts, before it is registered, when one of its
// platform tools is pinned looser than its function's floor (s.Floors;
// nil: not checked here, as in tests without Lambda). Each function is
// resolved as publishing resolves it (a placeholder from the stage's
// parameter toolset.ToolFunctionParam, an ARN as written); a pin the
// strictest floor admits is not read. A tool whose function is bound to
// nothing in the stage, does not exist, or whose floor cannot be read is
// refused with the others, naming the reason, and PUBLISH_UNAVAILABLE is
// answered only when SSM or Lambda did not answer. ts must pass the
// registration check first (it is run here when a floor is read, so that
// its refusal comes before any).
func (s *Service) checkFloors(ctx context.Context, ts *toolset.Toolset) error {
	if s.Floors == nil {
		return nil
	}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		if p := ts.Tools[name]; p.Platform() && !strictest(p) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		return &Error{Code: publishapi.CodeRefused, Message: err.Error()}
	}
	var refused []string
	for _, name := range names {
		pinned := ts.Tools[name]
		arn, err := s.toolFunction(ctx, pinned.Function)
		if err == nil {
			err = s.Floors.Admit(ctx, name, pinned, arn)
		}
		if err == nil {
			continue
		}
		te := tool.Classify(err)
		if te.Retryable() {
			return &Error{Code: publishapi.CodeUnavailable, Message: fmt.Sprintf("the floor of tool %s's function could not be read: %s; nothing was registered", name, te.Message), Err: err}
		}
		refused = append(refused, fmt.Sprintf("tool %s: %s", name, te.Message))
	}
	if len(refused) == 0 {
		return nil
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "toolset refused by its platform tools' floors", "toolset_id", ts.ID, "tools", len(refused))
	}
	r := &toolset.Refusal{ToolsetID: ts.ID, Rule: RuleFloor, Reason: strings.Join(refused, "; ")}
	return &Error{Code: publishapi.CodeRefused, Message: excerpt.Bytes(r.Error(), maxDraftMessage, "...") + "; nothing was registered"}
}

// toolFunction resolves a pinned platform tool's function reference to
// its ARN as Publish substitutes it: a placeholder from the stage's
// parameter, an ARN as written. Errors are *tool.Error as the proxy's
// (platformtool.Functions.Resolve).
func (s *Service) toolFunction(ctx context.Context, ref string) (string, error) {
	m := toolset.FunctionPattern.FindStringSubmatch(ref)
	if m == nil {
		if toolset.LambdaARNPattern.MatchString(ref) {
			return ref, nil
		}
		return "", tool.Errorf(tool.Internal, "the pinned function %.80q is neither a Lambda function ARN nor a ${Function...} placeholder", ref)
	}
	name := toolset.ToolFunctionParam(s.Stage, m[1])
	arn, err := s.Params.Get(ctx, name)
	switch {
	case errors.Is(err, deployment.ErrParamNotFound):
		return "", tool.Wrap(tool.PermissionDenied, err, "the pinned function %s is bound to no function in stage %s (no SSM parameter %s), so its floor cannot be read", ref, s.Stage, name)
	case err != nil:
		return "", tool.Wrap(tool.UpstreamUnavailable, err, "the SSM parameter of the pinned function %s could not be read", ref)
	case !toolset.LambdaARNPattern.MatchString(arn):
		return "", tool.Errorf(tool.Internal, "the SSM parameter %s of the pinned function %s does not hold a Lambda function ARN", name, ref)
	}
	return arn, nil
}
