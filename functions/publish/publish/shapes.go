package publish

import (
	"context"
	"fmt"
	"slices"

	"maps"

	"github.com/toolgate/toolgate/shared/observed"
	shapedynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ShapeLister reads the shape items of one identity's partition
// (shapedynamo.Store.List).
type ShapeLister interface {
	List(ctx context.Context, id observed.Identity) ([]shapedynamo.Listed, int, error)
}

// ShowShapes returns the shapes registered toolset req.ID's tools learned
// (docs/declarations.md, "Reading them") to the caller its proof proves
// (publishapi.ShapesBinding): for each pinned tool that learns one, its
// identity as the dispatcher computes it (toolset.Tool.ShapeIdentity)
// and one Query of its partition (every host, for structured-data-fetch
// and http). The toolset is loaded and checked as ShowToolset loads it,
// with its errors. Shapes hold no value: the answer is names and types
// only. A failed read is publishapi.CodeUnavailable; a file over
// observed.MaxFileBytes publishapi.CodeRefused.
func (s *Service) ShowShapes(ctx context.Context, req ShowRequest) (*publishapi.ShapesResult, error) {
	who, ts, err := s.shown(ctx, req, publishapi.ShapesBinding(req.ID))
	if err != nil {
		return nil, err
	}
	file, skipped, err := ReadShapes(ctx, s.Shapes, ts)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the shapes could not be read", Err: err}
	}
	doc, err := file.Marshal()
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the shapes could not be encoded", Err: err}
	}
	if len(doc) > observed.MaxFileBytes {
		return nil, &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("the shapes of toolset %s are %d bytes, over %d", ts.ID, len(doc), observed.MaxFileBytes)}
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "shapes shown", "toolset_id", ts.ID, "reader", who.Principal, "tools", len(file.Tools), "skipped", skipped)
	}
	return &publishapi.ShapesResult{File: string(doc), Skipped: skipped}, nil
}

// ReadShapes reads the shapes pinned toolset ts's tools learned through
// shapes (nil: none), in tool name order: a tool that learns no shape
// (toolset.Tool.ShapeIdentity) is not read. It returns the shapes file,
// the items skipped as unreadable, and a failed read's error.
func ReadShapes(ctx context.Context, shapes ShapeLister, ts *toolset.Toolset) (*observed.File, int, error) {
	file := &observed.File{Toolset: ts.ID, Tools: map[string]observed.ToolShapes{}}
	if shapes == nil {
		return file, 0, nil
	}
	skipped := 0
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		id, perHost, learns := t.ShapeIdentity(name)
		if !learns {
			continue
		}
		listed, n, err := shapes.List(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		skipped += n
		var got observed.ToolShapes
		for _, l := range listed {
			switch {
			case perHost && l.Host != "":
				if got.Hosts == nil {
					got.Hosts = map[string]observed.HostShape{}
				}
				got.Hosts[l.Host] = observed.HostShape{LearnedFrom: l.LearnedFrom, Shape: l.Shape}
			case !perHost && l.Host == "":
				got.LearnedFrom, got.Shape = l.LearnedFrom, l.Shape
			default:
				skipped++
			}
		}
		if got.Shape != nil || len(got.Hosts) > 0 {
			file.Tools[name] = got
		}
	}
	return file, skipped, nil
}
