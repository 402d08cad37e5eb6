package recipient

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/testkit"
)

// emailCase is one line of testdata/email/recipients.jsonl, copied from the
// project's real-world cases (shared/cases/email.jsonl) with its source.
type emailCase struct {
	Recipient string   `json:"recipient"`
	Allow     []string `json:"allow"`
	Expect    Verdict  `json:"expect"`
	Why       string   `json:"why"`
	Source    string   `json:"source"`
}

// casesFile is the shared fixture; sendemail's tests read it too.
var casesFile = filepath.Join("..", "..", "testdata", "email", "recipients.jsonl")

func loadCases(t testing.TB) []emailCase {
	t.Helper()
	cases := testkit.LoadJSONL[emailCase](t, casesFile)
	for i, c := range cases {
		if c.Source == "" || (c.Expect != Allow && c.Expect != Refuse && c.Expect != Invalid) {
			t.Fatalf("%s: case %d (%q): without source or with expect %q", casesFile, i+1, c.Recipient, c.Expect)
		}
	}
	return cases
}

// caseList loads a case's allow-list. Some cases list entries that no valid
// recipient could match (@[127.0.0.1], @a.test): ParseList refuses those,
// so the case runs with the entries that load on their own, and the error
// must name the bad entry. An allow case must load completely.
func caseList(t testing.TB, c emailCase) List {
	t.Helper()
	l, err := ParseList(c.Allow)
	if err == nil {
		return l
	}
	if c.Expect == Allow {
		t.Fatalf("ParseList(%q): %v", c.Allow, err)
	}
	var good []string
	for _, e := range c.Allow {
		if _, err1 := ParseList([]string{e}); err1 == nil {
			good = append(good, e)
		} else if !strings.Contains(err1.Error(), quote(e)) {
			t.Errorf("ParseList error %q does not name the entry %q", err1, e)
		}
	}
	t.Logf("allow-list %q refused (%v); running with %q", c.Allow, err, good)
	l, err = ParseList(good)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestCases(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.Why, func(t *testing.T) {
			d := caseList(t, c).Decide(c.Recipient)
			if d.Verdict != c.Expect {
				t.Fatalf("Decide(%q) = %s (%s), want %s\nwhy: %s\nsource: %s", c.Recipient, d.Verdict, d.Reason, c.Expect, c.Why, c.Source)
			}
			if !strings.Contains(d.Reason, quote(c.Recipient)) {
				t.Errorf("reason %q does not name the recipient", d.Reason)
			}
			if c.Expect == Invalid && d.Address != (Address{}) {
				t.Errorf("invalid recipient came with an address %+v", d.Address)
			}
		})
	}
}
