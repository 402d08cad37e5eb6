// Package toolfloor is the owners' floor of a platform tool function:
// the tags a team sets on its function (TagTool for its stage, and
// TagReview, TagPolicy, TagIdempotent, TagDuplicates) that say how
// loosely a toolset may pin it, read into a Floor (FromTags) and checked
// against a pin (Floor.Admits; docs/tools.md, "The owners' floor").
//
// It is pure: it links no AWS client, so that the CDK apps that write the
// tags (infra/toolfunction, a team's app) and the functions that read
// them (shared/platformtool, functions/publish/publish) share one definition.
package toolfloor
