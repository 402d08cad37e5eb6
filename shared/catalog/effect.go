package catalog

import "slices"

// effectTargets are the input members of each catalog tool that decide
// where its effect lands: the recipients send-email's allow-list checks
// (toolgate:recipientAllow) and the replies' address, the URL and the
// method and headers the http host entries pin, the URL
// structured-data-fetch's host allow-list checks. A review never lets a
// reviewer edit them (review.editable, docs/reviews.md "Approve with
// edits"): an approval bounds what is sent, never where.
var effectTargets = map[string][]string{
	"send-email":            {"to", "cc", "bcc", "reply_to"},
	"http":                  {"url", "method", "headers"},
	"structured-data-fetch": {"url"},
}

// EffectTargets returns the input members of tool name that decide where
// its effect lands (sorted as declared), nil for a tool without any.
// The resolver refuses them in review.editable ([review-edit]); the
// review functions may read the same list.
func EffectTargets(name string) []string {
	return slices.Clone(effectTargets[name])
}
