package platformtool

import "github.com/toolgate/toolgate/shared/toolfloor"

// The owners' floor is package toolfloor's, which links no AWS client
// (the CDK app and a team's CDK app read it): these names keep the
// proxy's and the publish function's code as it was.

// Floor is toolfloor.Floor: a platform tool function's floor, the zero
// Floor the strictest.
type Floor = toolfloor.Floor

// The floor tags (toolfloor.TagReview, TagPolicy, TagIdempotent,
// TagDuplicates; docs/tools.md, "The owners' floor").
const (
	TagReview     = toolfloor.TagReview
	TagPolicy     = toolfloor.TagPolicy
	TagIdempotent = toolfloor.TagIdempotent
	TagDuplicates = toolfloor.TagDuplicates
)

// FloorFromTags is toolfloor.FromTags: a function's floor from its tags,
// the strictest with an error naming a tag whose value is neither of its
// two.
func FloorFromTags(tags map[string]string) (Floor, error) { return toolfloor.FromTags(tags) }
