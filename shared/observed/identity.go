package observed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/tool"
)

// Sources of a tool (Identity.Source): what the tool is besides its name,
// so that two toolsets naming different tools alike never share a shape.
const (
	// SourceCatalog is a catalog tool (shared/catalog).
	SourceCatalog = "catalog"
	// SourcePlatformPrefix starts a platform tool's source:
	// "platform:<function, as its toolset pins it>".
	SourcePlatformPrefix = "platform:"
	// SourceMCPPrefix starts an MCP tool's source: "mcp:<the server URL's
	// origin>#<the tool's name on the server>".
	SourceMCPPrefix = "mcp:"
)

// Identity is what a learned shape is keyed by (docs/declarations.md,
// "Observed shapes"): the results of one tool, under one pinned output
// schema, and, for the tools whose results come from a host the call
// names (structured-data-fetch, http), from one host: a union over every
// host would describe no API, and would show one team's API to every
// toolset that can reach another host.
type Identity struct {
	// Tool is the tool's name as its toolset pins it.
	Tool string
	// Source is the tool's own identity: SourceCatalog, SourcePlatformPrefix
	// and the pinned function, or SourceMCPPrefix and the server's origin
	// and the tool's name there.
	Source string
	// OutputSchemaDigest is SchemaDigest of the pinned output schema; ""
	// when the tool declares none.
	OutputSchemaDigest string
	// Host is the request's host (lower case, with its port when the URL
	// names one) for structured-data-fetch and http; "" for other tools.
	Host string
}

// PartitionKey is the digest the identity's item is keyed by (its
// partition key is table.Shape.Key of it, its sort key table.ShapeSK of
// Host, docs/declarations.md "The item and when it is written"): the
// lower-case hex SHA-256 of Tool, Source and OutputSchemaDigest, each
// written as its length in bytes, a ":" and the field (so that no two
// identities share a key). The host is left out, so that one Query of the
// partition lists every host a structured-data-fetch or http tool learned
// from. It names nothing readable: the item's tool attribute does.
func (id Identity) PartitionKey() string {
	return digestOf(id.Tool, id.Source, id.OutputSchemaDigest)
}

// Key is the digest of all four fields (written as PartitionKey writes
// its three, Host last): one identity's key in a container's memory.
func (id Identity) Key() string {
	return digestOf(id.Tool, id.Source, id.OutputSchemaDigest, id.Host)
}

// digestOf is the lower-case hex SHA-256 of fields, each written as its
// length, ":" and the field.
func digestOf(fields ...string) string {
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%d:%s", len(f), f)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// ErrBadItem is a store's error for a stored shape that does not read
// (Unmarshal's rules) or has no version: the dispatcher learns nothing
// under its identity until a later read finds a good one.
var ErrBadItem = errors.New("shape item does not read")

// SchemaDigest is "sha256:<hex>" of a schema document's RFC 8785 form, ""
// for an empty document (no schema declared), or an error for one that is
// not JSON.
func SchemaDigest(schema json.RawMessage) (string, error) {
	if len(schema) == 0 || string(schema) == "null" {
		return "", nil
	}
	// The one RFC 8785 digest of the contract (tool.InputDigest).
	_, digest, err := tool.InputDigest(schema)
	if err != nil {
		return "", fmt.Errorf("output schema digest: %w", err)
	}
	return digest, nil
}
