package httptool

import (
	"encoding/json"
	"net"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/tool"
)

// presented reports whether the request d decided carried cred:
// credential.Transport presents it only where the request's origin is its
// own, compared as it compares them (scheme and host lower-case, a
// scheme's default port left out: RFC 6454 §4).
func presented(cred *credential.Credential, d fetch.Decision) bool {
	if cred == nil {
		return false
	}
	want, err := url.Parse(cred.Target.Origin)
	return err == nil && origin(d.URL()) == origin(want)
}

// origin is u's "<scheme>://<host>[:<port>]", lower-case, without the
// scheme's default port.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		port = ""
	}
	if port == "" {
		if strings.Contains(host, ":") {
			return scheme + "://[" + host + "]"
		}
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// redactData passes a result's data through cred's Redact: a host that
// echoes the credential in a success's body does not put it in the
// ledger, the execution's state or its history. Data that is no longer
// JSON once redacted (the secret held JSON's own syntax) is
// TOOL_OUTPUT_INVALID, maybe applied for a request that is not a read
// (read false): the host answered success.
func redactData(data json.RawMessage, cred *credential.Credential, read bool) (json.RawMessage, error) {
	if cred == nil || len(data) == 0 {
		return data, nil
	}
	r := cred.Redact(string(data))
	if r == string(data) {
		return data, nil
	}
	if !json.Valid([]byte(r)) {
		te := tool.Errorf(tool.OutputInvalid, "the answer holds the credential the request presented, which cannot be taken out of it and keep it JSON")
		te.MaybeApplied = !read
		return nil, te
	}
	return json.RawMessage(r), nil
}
