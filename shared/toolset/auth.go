package toolset

// Auth is how a target a toolset pins (an MCP server, or an exact http
// host entry) is presented a credential (docs/credentials.md,
// "Declaring what a target needs"): a request header, or a segment of
// the pinned MCP URL's path. It is part of the toolset's content and id.
// A target without Auth never gets a credential.
type Auth struct {
	// Header is the request header that carries the credential, in
	// canonical form (textproto.CanonicalMIMEHeaderKey), such as
	// "Authorization" or "X-Api-Key". Empty with PathSegment.
	Header string `json:"header,omitempty"`
	// Scheme, with Header, is the authentication scheme written before
	// the credential, such as "Bearer" (RFC 6750 §2.1): the header's value
	// is "<Scheme> <credential>". Empty: the credential alone.
	Scheme string `json:"scheme,omitempty"`
	// PathSegment is the position, from 1, of the pinned MCP URL's path
	// segment written "{secret}", which the credential fills at call
	// time; 0 with Header. MCP servers only.
	PathSegment int `json:"path_segment,omitempty"`
	// OriginScheme is, on an http host entry, the scheme of the origin
	// the credential is bound to: "https" (when empty) or "http". An MCP
	// server's origin takes its pinned URL's scheme.
	OriginScheme string `json:"origin_scheme,omitempty"`
}
