package toolset

import (
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/shared/observed"
)

// The catalog tools whose result's data member is learned per host
// (docs/declarations.md, "What is learned").
const (
	shapeFetchTool = "structured-data-fetch"
	shapeHTTPTool  = "http"
)

// ShapeIdentity is the identity under which the shapes of the pinned
// tool name's results are learned (docs/declarations.md, "What is
// learned"), the one rule the dispatcher that learns them and the publish
// function that reads them share: the tool, its source (observed.
// SourceCatalog; observed.SourcePlatformPrefix and its function; or
// observed.SourceMCPPrefix, its server URL's origin in lower case, "#"
// and its name there) and its output schema's digest ("" when it
// declares none: no schema, {} or true).
//
// perHost reports a catalog structured-data-fetch or http tool, whose
// result's data member is learned per request host: id.Host is left ""
// for the caller to set. learns is false for a tool that learns nothing:
// one with a declared output schema that is not per host, one whose MCP
// URL does not parse, or one whose schema has no digest.
func (t *Tool) ShapeIdentity(name string) (id observed.Identity, perHost, learns bool) {
	id = observed.Identity{Tool: name, Source: observed.SourceCatalog}
	switch {
	case t.MCP != nil:
		u, err := url.Parse(t.MCP.URL)
		if err != nil {
			return id, false, false
		}
		id.Source = observed.SourceMCPPrefix + u.Scheme + "://" + strings.ToLower(u.Host) + "#" + t.MCP.Name
	case t.Function != "":
		id.Source = observed.SourcePlatformPrefix + t.Function
	}
	// A schema that declares nothing ({} or true: an MCP tool that lists
	// no outputSchema, a platform tool's output_schema: {}) is none.
	declared := true
	switch strings.TrimSpace(string(t.OutputSchema)) {
	case "", "null", "true", "{}":
		declared = false
	}
	if declared {
		digest, err := observed.SchemaDigest(t.OutputSchema)
		if err != nil {
			return id, false, false
		}
		id.OutputSchemaDigest = digest
	}
	if id.Source == observed.SourceCatalog && (name == shapeFetchTool || name == shapeHTTPTool) {
		return id, true, true
	}
	return id, false, !declared
}
