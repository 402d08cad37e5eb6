package enduser

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

const home = "123456789012"

func TestCheckIDAcceptsVisibleASCIIUpToTheBound(t *testing.T) {
	for _, id := range []string{"alice", "alice@example.com", "tenant-1/user-42", "a", strings.Repeat("x", MaxIDLength), "!~#"} {
		if err := CheckID(id); err != nil {
			t.Errorf("CheckID(%q) = %v, want nil", id, err)
		}
	}
}

func TestCheckIDRefusesWhatIsNoID(t *testing.T) {
	for name, c := range map[string]struct{ id, want string }{
		"empty":         {"", "empty"},
		"too long":      {strings.Repeat("x", MaxIDLength+1), "over 256"},
		"space":         {"alice smith", "a space"},
		"newline":       {"alice\n", "control character 0x0a"},
		"non-ASCII":     {"zoë", "non-ASCII"},
		"star wildcard": {"alice*", "wildcard"},
		"question mark": {"al?ce", "wildcard"},
		"DEL":           {"a\x7f", "control character 0x7f"},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckID(c.id)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckID(%q) = %v, want an error saying %q", c.id, err, c.want)
			}
		})
	}
}

func TestScopeIsHMACSHA256OfTheIDUnderTheKeyInHex(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	m := hmac.New(sha256.New, key)
	m.Write([]byte("alice"))
	want := "end_user:" + hex.EncodeToString(m.Sum(nil))
	if got := Scope(key, "alice"); got != want {
		t.Fatalf("Scope = %s, want %s", got, want)
	}
	if !ValidScope(want) {
		t.Errorf("ValidScope(%s) = false", want)
	}
	if Scope(key, "bob") == want || Scope([]byte(strings.Repeat("j", 32)), "alice") == want {
		t.Error("another id or another key gave the same scope")
	}
}

func TestValidScopeRefusesOtherForms(t *testing.T) {
	for _, s := range []string{"", "end_user:", "end_user:alice", "toolset", "end_user:" + strings.Repeat("A", 64), "end_user:" + strings.Repeat("a", 63), "run:x"} {
		if ValidScope(s) {
			t.Errorf("ValidScope(%q) = true", s)
		}
	}
}

func TestParseReadsEntriesAndMayActForNeedsOneEntryAdmittingBoth(t *testing.T) {
	m, err := Parse([]byte(`[
		{"principal": "arn:aws:iam::123456789012:role/support", "endUser": "customer-*"},
		{"principal": "arn:aws:iam::123456789012:user/alice", "endUser": "alice"}
	]`), home)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		principal, id string
		want          bool
	}{
		{"arn:aws:iam::123456789012:role/support", "customer-42", true},
		{"arn:aws:iam::123456789012:role/support", "alice", false},
		{"arn:aws:iam::123456789012:user/alice", "alice", true},
		// Each entry admits its own pair: alice may not act for customers.
		{"arn:aws:iam::123456789012:user/alice", "customer-42", false},
		{"arn:aws:iam::123456789012:role/support2", "customer-42", false},
		{"arn:aws:iam::123456789012:role/support", "customer-4 2", false}, // not an id
		{"", "alice", false},
	} {
		if got := m.MayActFor(c.principal, c.id); got != c.want {
			t.Errorf("MayActFor(%s, %q) = %v, want %v", c.principal, c.id, got, c.want)
		}
	}
}

func TestTheEmptyMappingAdmitsNobody(t *testing.T) {
	for _, data := range []string{"", "  ", "[]"} {
		m, err := Parse([]byte(data), home)
		if err != nil {
			t.Fatalf("Parse(%q): %v", data, err)
		}
		if m.MayActFor("arn:aws:iam::123456789012:role/admin", "alice") {
			t.Errorf("Parse(%q) admits someone", data)
		}
	}
	if (Mapping{}).MayActFor("arn:aws:iam::123456789012:role/admin", "alice") {
		t.Error("the zero Mapping admits someone")
	}
}

func TestParseRefusalsNameTheEntryAndMember(t *testing.T) {
	ok := `{"principal": "arn:aws:iam::123456789012:role/support", "endUser": "*"}`
	for name, c := range map[string]struct{ data, want string }{
		"not an array":      {`{"principal": "x"}`, "not a JSON array"},
		"not JSON":          {`[`, "not a JSON array"},
		"entry not object":  {`[` + ok + `, 3]`, "entry 1: the entry is not a JSON object"},
		"null entry":        {`[null]`, "entry 0: the entry is not a JSON object"},
		"unknown member":    {`[{"principal": "arn:aws:iam::123456789012:role/a", "endUser": "*", "role": "x"}]`, `entry 0: member "role" is not principal or endUser`},
		"letter case":       {`[{"Principal": "arn:aws:iam::123456789012:role/a", "endUser": "*"}]`, `entry 0: member "Principal"`},
		"duplicate member":  {`[{"principal": "arn:aws:iam::123456789012:role/a", "principal": "arn:aws:iam::123456789012:role/b", "endUser": "*"}]`, "entry 0: the entry field \"principal\" appears twice"},
		"missing principal": {`[{"endUser": "*"}]`, "entry 0: principal is missing"},
		"missing endUser":   {`[{"principal": "arn:aws:iam::123456789012:role/a"}]`, "entry 0: endUser is missing"},
		"principal number":  {`[{"principal": 3, "endUser": "*"}]`, "entry 0: principal is not a string"},
		"principal null":    {`[{"principal": null, "endUser": "*"}]`, "entry 0: principal is not a string"},
		"any account":       {`[{"principal": "arn:aws:iam::*:role/a", "endUser": "*"}]`, "entry 0: principal: reviewer \"arn:aws:iam::*:role/a\" must name its AWS account"},
		"another account":   {`[` + ok + `, {"principal": "arn:aws:iam::210987654321:role/a", "endUser": "*"}]`, "entry 1: principal \"arn:aws:iam::210987654321:role/a\" names account 210987654321, not the deployment's"},
		"not an ARN":        {`[{"principal": "support", "endUser": "*"}]`, "entry 0: principal: reviewer \"support\" must be an IAM principal ARN pattern"},
		"endUser space":     {`[{"principal": "arn:aws:iam::123456789012:role/a", "endUser": "a b"}]`, "entry 0: endUser \"a b\""},
		"endUser too long":  {`[{"principal": "arn:aws:iam::123456789012:role/a", "endUser": "` + strings.Repeat("a", 257) + `"}]`, "entry 0: endUser is 257 bytes"},
		"data after":        {`[] []`, "not a JSON array"},
		"too many entries":  {"[" + strings.TrimSuffix(strings.Repeat(ok+",", MaxEntries+1), ",") + "]", "101 entries, over 100"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.data), home)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestParseWithoutAnAccountChecksTheShapeOnly(t *testing.T) {
	if _, err := Parse([]byte(`[{"principal": "arn:aws:iam::210987654321:role/a", "endUser": "*"}]`), ""); err != nil {
		t.Fatalf("Parse with no account: %v", err)
	}
}

func TestFromEnvNamesTheVariable(t *testing.T) {
	_, err := FromEnv(func(k string) string {
		if k == EnvMapping {
			return "nope"
		}
		return ""
	}, home)
	if err == nil || !strings.HasPrefix(err.Error(), EnvMapping+": ") {
		t.Fatalf("FromEnv = %v, want an error naming %s", err, EnvMapping)
	}
	m, err := FromEnv(func(string) string { return "" }, home)
	if err != nil || len(m.Entries) != 0 {
		t.Fatalf("FromEnv of nothing = %v, %v; want the empty mapping", m, err)
	}
}

func FuzzParseMapping(f *testing.F) {
	f.Add([]byte(`[{"principal": "arn:aws:iam::123456789012:role/support", "endUser": "customer-*"}]`), "customer-1")
	f.Add([]byte(`[{"principal": "arn:aws:iam::123456789012:user/*", "endUser": "?"}]`), "a")
	f.Add([]byte(`[]`), "")
	f.Add([]byte(`[{"principal": "arn:aws:sts::123456789012:assumed-role/r/*", "endUser": "*"}, null]`), "x")
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		m, err := Parse(data, home)
		if err != nil {
			if m.Entries != nil {
				t.Fatal("a refused mapping has entries")
			}
			return
		}
		for _, e := range m.Entries {
			if checkEntry(e, home) != nil {
				t.Fatalf("Parse kept an entry checkEntry refuses: %+v", e)
			}
			// Every principal pattern names the deployment's account.
			if !strings.HasPrefix(e.Principal, "arn:") || !strings.Contains(e.Principal, ":"+home+":") {
				t.Fatalf("entry %+v names no principal of %s", e, home)
			}
		}
		principal := "arn:aws:iam::" + home + ":role/support"
		if m.MayActFor(principal, id) && CheckID(id) != nil {
			t.Fatalf("MayActFor admitted %q, which is no end-user id", id)
		}
	})
}

// The scope of a known id under a known key, computed independently
// (printf %s alice@example.com | openssl dgst -sha256 -hmac <key>): the
// same vector pins credential.EndUserScope, which is defined to equal
// Scope, so the two cannot drift apart.
func TestScopeOfAKnownVector(t *testing.T) {
	const want = "end_user:841240d2a5b6654b3ae21fc4499db7b7867077cdd67c3e16cef1f9843e27d1fa"
	if got := Scope([]byte("0123456789abcdef0123456789abcdef"), "alice@example.com"); got != want {
		t.Fatalf("Scope = %s, want %s", got, want)
	}
}

// The envelope's start member takes exactly Scope's form as end_user
// (shared/tool cannot import this package and checks the form itself).
func TestEndUserScopeForm(t *testing.T) {
	env := func(endUser string) string {
		return `{"tool":"send-email","toolset_id":"ts_0123456789abcdef0123456789abcdef","run_id":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1","seq":"2","step":"send","idempotency_key":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1/2","attempt":1,"tolerate_duplicates":false,"input":{},` +
			`"start":{"starter":"arn:aws:iam::123456789012:user/a","end_user":"` + endUser + `"}}`
	}
	scope := Scope([]byte(strings.Repeat("k", 32)), "alice")
	if _, err := tool.DecodeEnvelope([]byte(env(scope))); err != nil {
		t.Fatalf("the envelope refuses Scope's form: %v", err)
	}
	for _, bad := range []string{"end_user:alice", strings.ToUpper(scope), scope + "0"} {
		if ValidScope(bad) {
			t.Fatalf("ValidScope(%q)", bad)
		}
		if _, err := tool.DecodeEnvelope([]byte(env(bad))); err == nil {
			t.Fatalf("the envelope takes %q, which ValidScope refuses", bad)
		}
	}
}
