package enduser

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
)

// MaxIDLength bounds an end-user id, in bytes: 256, room for an email
// address (RFC 5321 caps a path at 256 octets) or a tenant-qualified
// user id, and short enough to quote in a record.
const MaxIDLength = 256

// CheckID validates an end-user id: 1 to MaxIDLength bytes of visible
// ASCII (0x21 to 0x7E) other than "*" and "?", the mapping's wildcards.
// ASCII only, so that one id has one spelling: two Unicode forms of one
// name (NFC, NFD) would be two ids with two scopes. The error quotes at
// most 64 bytes of id.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("end-user id is empty")
	case len(id) > MaxIDLength:
		return fmt.Errorf("end-user id is %d bytes, over %d", len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e || c == '*' || c == '?' {
			return fmt.Errorf("end-user id %s holds %s: an end-user id is visible ASCII (no space, control character or non-ASCII byte) without * or ?",
				strconv.Quote(excerpt.Bytes(id, 64, "...")), describe(c))
		}
	}
	return nil
}

func describe(c byte) string {
	switch {
	case c == '*' || c == '?':
		return fmt.Sprintf("%q, a wildcard of the end-user mapping", c)
	case c == ' ':
		return "a space"
	case c >= 0x80:
		return "a non-ASCII byte"
	}
	return fmt.Sprintf("the control character 0x%02x", c)
}

// ScopePrefix starts every end-user scope (Scope).
const ScopePrefix = "end_user:"

// Scope is the end-user scope of id under key, the stage's end-user key
// (32 bytes, shared/secrets LoadEndUserKey): "end_user:" and the 64
// lower-case hex digits of HMAC-SHA256(key, id) (RFC 2104). It is what a
// start record holds as end_user_scope, the envelope's start.end_user,
// and the "scope" of an end user's credentials (their sort key and KMS
// encryption context), so that no record or log outside the start record
// names the raw id. The key is never rotated: a new key would orphan
// every end user's credentials. credential.EndUserScope is defined to
// equal it.
func Scope(key []byte, id string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	return ScopePrefix + hex.EncodeToString(m.Sum(nil))
}

// scopePattern is Scope's form.
var scopePattern = regexp.MustCompile(`^end_user:[0-9a-f]{64}$`)

// ValidScope reports whether s has Scope's form.
func ValidScope(s string) bool { return scopePattern.MatchString(s) }

// MaxEntries bounds the mapping's entries: 100, as a review's reviewer
// patterns (reviewer.MaxReviewers). Lambda's 4 KB for a function's whole
// environment bounds it more tightly in practice (AWS Lambda quotas).
const MaxEntries = 100

// Entry is one entry of the end-user mapping: a principal whose ARN
// matches Principal may act for an end user whose id matches EndUser.
type Entry struct {
	// Principal is an IAM principal ARN pattern as reviewer patterns are
	// written (reviewer.CheckPattern: it names one account, "*" and "?"
	// only in its resource part), of the deployment's own account; it is
	// matched against the verified principal (docs/identity.md,
	// "Identity"), so write arn:aws:iam::ACCOUNT:role/NAME for a role.
	Principal string `json:"principal"`
	// EndUser is an end-user id pattern in the same glob syntax
	// (reviewer.Match: "*" any run of characters, "?" one, everything
	// else literally and case-sensitively): CheckID's characters plus "*"
	// and "?", 1 to MaxIDLength bytes. "*" alone admits every end user.
	EndUser string `json:"endUser"`
}

// Mapping is the platform's end-user mapping (platform configuration
// endUserMapping, the variable EnvMapping): which principals may act for
// which end users. The zero Mapping admits nobody.
type Mapping struct {
	Entries []Entry
}

// MayActFor reports whether principal may act for the end user id: some
// entry admits both, and id is an end-user id (CheckID). No entry, no
// end user: the default is deny.
func (m Mapping) MayActFor(principal, id string) bool {
	if principal == "" || CheckID(id) != nil {
		return false
	}
	for _, e := range m.Entries {
		if reviewer.Match(e.Principal, principal) && reviewer.Match(e.EndUser, id) {
			return true
		}
	}
	return false
}

// Parse reads the end-user mapping from JSON: an array of at most
// MaxEntries objects with exactly the members "principal" and "endUser",
// each a string (Entry says what each admits). account, when not empty,
// is the deployment's own account (12 digits), which every principal
// pattern must name: a pattern naming another would admit principals no
// function of the deployment verifies. Empty or whitespace-only data is
// the empty mapping. Each error names the entry (0-based) and the member.
func Parse(data []byte, account string) (Mapping, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Mapping{}, nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Mapping{}, fmt.Errorf("end-user mapping is not a JSON array of entries (want [{\"principal\": \"arn:aws:iam::ACCOUNT:role/NAME\", \"endUser\": \"ID pattern\"}, ...])")
	}
	if len(raw) > MaxEntries {
		return Mapping{}, fmt.Errorf("end-user mapping: %d entries, over %d", len(raw), MaxEntries)
	}
	m := Mapping{Entries: make([]Entry, 0, len(raw))}
	for i, r := range raw {
		e, err := decodeEntry(r)
		if err == nil {
			err = checkEntry(e, account)
		}
		if err != nil {
			return Mapping{}, fmt.Errorf("end-user mapping: entry %d: %w", i, err)
		}
		m.Entries = append(m.Entries, e)
	}
	return m, nil
}

// decodeEntry reads one entry's members by their exact names, once each
// (tool.DecodeObject: Go's decoder alone would match any letter case and
// keep the last of duplicates), each a string.
func decodeEntry(r json.RawMessage) (Entry, error) {
	members, err := tool.DecodeObject("the entry", r)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	for name, v := range members {
		var dst *string
		switch name {
		case "principal":
			dst = &e.Principal
		case "endUser":
			dst = &e.EndUser
		default:
			return Entry{}, fmt.Errorf("member %s is not principal or endUser", strconv.Quote(excerpt.Bytes(name, 40, "...")))
		}
		if err := json.Unmarshal(v, dst); err != nil || string(bytes.TrimSpace(v)) == "null" {
			return Entry{}, fmt.Errorf("%s is not a string", name)
		}
	}
	return e, nil
}

// checkEntry validates one entry: both members present and well formed,
// the principal of account (when given).
func checkEntry(e Entry, account string) error {
	if e.Principal == "" {
		return errors.New("principal is missing or empty")
	}
	if err := reviewer.CheckPattern(e.Principal); err != nil {
		return fmt.Errorf("principal: %w", err)
	}
	if a := reviewer.Account(e.Principal); account != "" && a != account {
		return fmt.Errorf("principal %s names account %s, not the deployment's %s: the mapping admits the deployment's own principals only",
			strconv.Quote(excerpt.Bytes(e.Principal, 80, "...")), a, account)
	}
	if e.EndUser == "" {
		return errors.New("endUser is missing or empty")
	}
	if len(e.EndUser) > MaxIDLength {
		return fmt.Errorf("endUser is %d bytes, over %d", len(e.EndUser), MaxIDLength)
	}
	// An id pattern is an id whose "*" and "?" are wildcards.
	lit := strings.NewReplacer("*", "a", "?", "a").Replace(e.EndUser)
	if err := CheckID(lit); err != nil {
		return fmt.Errorf("endUser %s: an end-user id pattern is visible ASCII, with * and ? as wildcards", strconv.Quote(excerpt.Bytes(e.EndUser, 64, "...")))
	}
	return nil
}

// EnvMapping is the variable that holds the end-user mapping as JSON
// (Parse) on review-request and publish; unset or empty: nobody may act
// for any end user. The CDK app writes it from endUserMapping.
const EnvMapping = "TOOLGATE_END_USER_MAPPING"

// EnvKeyParam is the variable naming the stage's end-user key parameter
// (shared/functionconfig EndUserKeyParam), which review-request and
// publish read at cold start.
const EnvKeyParam = "TOOLGATE_END_USER_KEY_PARAM"

// FromEnv reads the mapping from EnvMapping (Parse with account, the
// deployment's account); the error names the variable.
func FromEnv(getenv func(string) string, account string) (Mapping, error) {
	m, err := Parse([]byte(getenv(EnvMapping)), account)
	if err != nil {
		return Mapping{}, fmt.Errorf("%s: %w", EnvMapping, err)
	}
	return m, nil
}
