package credential

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
)

// The kinds of Scope, as Scope.Kind names them in messages.
const (
	KindToolset = "toolset"
	KindEndUser = "end_user"
	KindRun     = "run"
)

// maxExecutionName is Step Functions' limit on an execution's name, in
// characters (StartExecution, "name": 1 to 80).
const maxExecutionName = 80

// RunScope is the scope of the run whose Step Functions execution is named
// executionName: "run:<executionName>".
func RunScope(executionName string) Scope { return Scope(KindRun + ":" + executionName) }

// EndUserScope is the scope of the end user id: "end_user:" and the
// lowercase hex HMAC-SHA256 of id under key, the stage's end-user key
// (docs/credentials.md, "End users"). The raw id is never part of a scope:
// KMS encryption contexts appear in clear in CloudTrail.
func EndUserScope(key []byte, id string) Scope {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	return Scope(KindEndUser + ":" + hex.EncodeToString(m.Sum(nil)))
}

// Kind returns s's kind, KindToolset, KindEndUser or KindRun, or "" when
// s is none of the three forms (ParseScope).
func (s Scope) Kind() string {
	if ParseScope(string(s)) != nil {
		return ""
	}
	if s == ScopeToolset {
		return KindToolset
	}
	kind, _, _ := strings.Cut(string(s), ":")
	return kind
}

// ParseScope reports whether s is a scope: "toolset"; "end_user:" and 64
// lowercase hex digits (EndUserScope); or "run:" and a Step Functions
// execution name (1 to 80 characters, none of them whitespace, a control
// character or one of < > { } [ ] ? * " # % \ ^ | ~ ` $ & , ; : /, as
// StartExecution's "name" rules). The error names the rule, and quotes s
// (a scope is not secret).
func ParseScope(s string) error {
	kind, rest, _ := strings.Cut(s, ":")
	switch {
	case s == string(ScopeToolset):
		return nil
	case kind == KindEndUser:
		if len(rest) != 2*sha256.Size || strings.ToLower(rest) != rest {
			return fmt.Errorf("scope %q: end_user: must be followed by 64 lowercase hex digits", s)
		}
		if _, err := hex.DecodeString(rest); err != nil {
			return fmt.Errorf("scope %q: end_user: must be followed by 64 lowercase hex digits", s)
		}
		return nil
	case kind == KindRun:
		if n := len([]rune(rest)); n < 1 || n > maxExecutionName {
			return fmt.Errorf("scope %q: run: must be followed by an execution name of 1 to %d characters", s, maxExecutionName)
		}
		for _, r := range rest {
			if r <= ' ' || unicode.IsSpace(r) || r == 0x7f || (r >= 0x80 && r <= 0x9f) || strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", r) {
				return fmt.Errorf("scope %q: run: the execution name has a character Step Functions does not allow in one", s)
			}
		}
		return nil
	}
	return fmt.Errorf("scope %q is none of toolset, end_user:<hex> or run:<execution name>", s)
}
