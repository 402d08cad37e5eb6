package toolset

// HTTPHost is one entry of a toolset's http_hosts: a host the http tool
// may reach, the methods it may send there, the custom headers a call may
// set there, and whether the host honours an idempotency key
// (docs/tools.md, "http"). The tool also needs the host on the platform's
// allow-list for its function.
type HTTPHost struct {
	// Host is a host list entry in package hostlist's canonical form
	// (host[:port], a leading "*." wildcard; no public suffix).
	Host string `json:"host"`
	// Methods are the methods calls may send to the host, from
	// httprule.Methods, sorted and unique; at least one.
	Methods []string `json:"methods"`
	// Headers are the custom request headers a call may set for the host,
	// besides httprule's standard ones, in canonical form
	// (textproto.CanonicalMIMEHeaderKey), sorted and unique; none is
	// httprule.Forbidden. Omitted when empty.
	Headers []string `json:"headers,omitempty"`
	// Idempotency, when set, declares that the host honours an
	// idempotency key in a request header: a call with a method that is
	// not a read is then retried under that key (at_least_once) instead
	// of at most once. Omitted when not set.
	Idempotency *HTTPIdempotency `json:"idempotency,omitempty"`
}

// HTTPIdempotency is how a host takes an idempotency key.
type HTTPIdempotency struct {
	// Header is the request header that carries the key, in canonical
	// form (such as "Idempotency-Key"); neither standard nor forbidden
	// (httprule.CheckHeaderName).
	Header string `json:"header"`
	// Format is how the key is written: httprule.FormatRaw (the default
	// when a toolset file leaves it out), FormatSFString or FormatUUID.
	Format string `json:"format"`
}
