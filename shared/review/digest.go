package review

import (
	"encoding/json"

	"github.com/toolgate/toolgate/shared/tool"
)

// Digest is tool.InputDigest, the one input digest: the canonical input a
// review records and the digest its approval is compared with at dispatch.
func Digest(input json.RawMessage) (canonical []byte, digest string, err error) {
	return tool.InputDigest(input)
}

// truncate keeps a quoted value short enough for a message.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
