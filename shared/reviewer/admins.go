package reviewer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ParseAdmins reads an admins setting: text is a JSON list of patterns
// (CheckPattern), each naming account, the function's own; "" or only
// white space is none. name is the environment variable the text came
// from, which every error starts with (with the index of a bad entry):
// credential admins (publishapi.EnvCredentialAdmins) and webhook admins
// (webhookapi.EnvAdmins) are principals of the deployment's own account
// (docs/credentials.md, docs/webhooks.md).
func ParseAdmins(name, text, account string) ([]string, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("%s: not a JSON list of strings", name)
	}
	for i, p := range list {
		if err := CheckPattern(p); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		if a := Account(p); a != account {
			return nil, fmt.Errorf("%s[%d]: pattern names account %s, not this function's %s: admins are principals of the deployment's own account", name, i, a, account)
		}
	}
	return list, nil
}

// IsAdmin reports whether principal matches one of patterns (Match).
func IsAdmin(patterns []string, principal string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return Match(p, principal) })
}
