package toolfloor

import (
	"fmt"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// TagTool is the tag that makes a function a platform tool of a stage:
// toolgate:tool=<stage>. The proxy's and the publish function's roles may
// invoke, and list the tags of, only functions tagged for their own stage
// (docs/infra.md; infra/toolfunction's TagKey is this constant).
const TagTool = "toolgate:tool"

// The tags a team sets on its platform tool function to say how it may be
// called (docs/tools.md, "The owners' floor"): the floor under every
// toolset that pins the function. A toolset is written by a publisher; the
// tags are written by whoever deploys the function (toolfunction.New sets
// them from its props), and toolgate grants no publisher, operator or
// reviewer lambda:TagResource. A tag that is absent takes the strictest
// value, so a function tagged only for its stage is called under a review,
// at most once, as a function that does not honour idempotency keys.
const (
	// TagReview is "required" (the default) or "optional": whether a
	// toolset may pin the tool with review_required false.
	TagReview = "toolgate:review"
	// TagPolicy is "at_most_once" (the default) or "at_least_once":
	// whether a toolset may pin policy at_least_once, under which a call
	// whose outcome is unknown runs again.
	TagPolicy = "toolgate:policy"
	// TagIdempotent is "false" (the default) or "true": whether the
	// function honours the idempotency key, so that a toolset may pin
	// idempotent true.
	TagIdempotent = "toolgate:idempotent"
	// TagDuplicates is "refuse" (the default) or "tolerate": whether a
	// toolset may pin tolerate_duplicates true, the consent to retry a
	// function that does not honour idempotency keys.
	TagDuplicates = "toolgate:duplicates"
)

// Floor is a platform tool function's floor, read from its tags
// (FromTags). The zero Floor is the strictest.
type Floor struct {
	// ReviewOptional: a toolset may pin review_required false.
	ReviewOptional bool
	// AtLeastOnce: a toolset may pin policy at_least_once.
	AtLeastOnce bool
	// Idempotent: a toolset may pin idempotent true.
	Idempotent bool
	// TolerateDuplicates: a toolset may pin tolerate_duplicates true.
	TolerateDuplicates bool
}

// FromTags reads a function's floor from its tags (tag key -> value,
// as Lambda's ListTags answers). An absent tag is the strictest value; a
// value that is neither of a tag's two is an error naming the tag, and the
// floor returned with it is the strictest, so that a caller that goes on
// refuses rather than relaxes.
func FromTags(tags map[string]string) (Floor, error) {
	var f Floor
	var bad []string
	read := func(key, strict, relaxed string, set *bool) {
		switch v, ok := tags[key]; {
		case !ok || v == strict:
		case v == relaxed:
			*set = true
		default:
			bad = append(bad, fmt.Sprintf("%s=%.40q is neither %s nor %s", key, v, strict, relaxed))
		}
	}
	read(TagReview, "required", "optional", &f.ReviewOptional)
	read(TagPolicy, string(catalog.AtMostOnce), string(catalog.AtLeastOnce), &f.AtLeastOnce)
	read(TagIdempotent, "false", "true", &f.Idempotent)
	read(TagDuplicates, "refuse", "tolerate", &f.TolerateDuplicates)
	if len(bad) > 0 {
		return Floor{}, fmt.Errorf("the function's floor tags: %v", bad)
	}
	return f, nil
}

// Tags returns f as the tags that say it, every key written (the inverse
// of FromTags).
func (f Floor) Tags() map[string]string {
	pick := func(relaxed bool, strict, loose string) string {
		if relaxed {
			return loose
		}
		return strict
	}
	return map[string]string{
		TagReview:     pick(f.ReviewOptional, "required", "optional"),
		TagPolicy:     pick(f.AtLeastOnce, string(catalog.AtMostOnce), string(catalog.AtLeastOnce)),
		TagIdempotent: pick(f.Idempotent, "false", "true"),
		TagDuplicates: pick(f.TolerateDuplicates, "refuse", "tolerate"),
	}
}

// Admits returns nil when the pinned contract p is at least as strict as
// f, and otherwise a TOOL_PERMISSION_DENIED *tool.Error naming the first
// pinned member the function's owners do not allow and the tag that says
// so (name is the tool's name in the toolset, for the message).
func (f Floor) Admits(name string, p toolset.Tool) error {
	deny := func(what, tag, value string) error {
		return tool.Errorf(tool.PermissionDenied, "the pinned toolset calls tool %s with %s, which its function's owners do not allow (tag %s=%s); they must change the tag, or the toolset must be registered again without it", name, what, tag, value)
	}
	switch {
	case !p.ReviewRequired && !f.ReviewOptional:
		return deny("review_required false", TagReview, "required")
	case p.Policy == catalog.AtLeastOnce && !f.AtLeastOnce:
		return deny("policy at_least_once", TagPolicy, string(catalog.AtMostOnce))
	case p.Idempotent && !f.Idempotent:
		return deny("idempotent true", TagIdempotent, "false")
	case p.TolerateDuplicates && !f.TolerateDuplicates:
		return deny("tolerate_duplicates true", TagDuplicates, "refuse")
	}
	return nil
}

// AdmitsConsent returns nil unless a call consents to duplicates
// (tolerate, the envelope's tolerate_duplicates: a Solution step's or a
// direct-lane caller's) of a tool pinned p at_most_once whose function's
// owners refuse them, and then a TOOL_PERMISSION_DENIED *tool.Error naming
// the tag. The consent lets the dispatcher re-run an at_most_once call
// whose outcome is unknown, which is what TagDuplicates refuses, whoever
// gives it; an at_least_once call runs again without it, under a pin the
// floor admitted (Admits).
func (f Floor) AdmitsConsent(name string, p toolset.Tool, tolerate bool) error {
	if tolerate && p.Policy != catalog.AtLeastOnce && !f.TolerateDuplicates {
		return tool.Errorf(tool.PermissionDenied, "the call consents to duplicates of the at_most_once tool %s (tolerate_duplicates true, from its step or its envelope), which its function's owners do not allow (tag %s=refuse); they must change the tag, or the step must not set tolerate_duplicates", name, TagDuplicates)
	}
	return nil
}
