package inbound_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/inbound"
)

// stepFunctionsName is the execution name rule toolgate keeps to
// (Step Functions StartExecution "name", 1 to 80 characters).
var stepFunctionsName = regexp.MustCompile(`^[0-9A-Za-z_-]{1,80}$`)

var nameKey = []byte("a per-deployment secret of 32 bytes.")

func TestExecutionNameIsPrefixAnd32HexWithinStepFunctionsRules(t *testing.T) {
	for _, c := range []struct{ prefix, a, b string }{
		{inbound.PrefixInbound, "billing", "evt_1"},
		{inbound.PrefixSchedule, "nightly", "2026-12-03T02:00:00Z"},
		{"", "", ""},
		{inbound.PrefixInbound, "src", "id with spaces, dots. and / slashes"},
	} {
		n := inbound.ExecutionName(nameKey, c.prefix, c.a, c.b)
		if !stepFunctionsName.MatchString(n) || !regexp.MustCompile(`^`+c.prefix+`[0-9a-f]{32}$`).MatchString(n) {
			t.Fatalf("ExecutionName(%q, %q, %q) = %q", c.prefix, c.a, c.b, n)
		}
	}
	long := "p-0123456789012345678901234567890123456789012345" // 48 characters
	if n := inbound.ExecutionName(nameKey, long, "a", "b"); len(n) != 80 || !stepFunctionsName.MatchString(n) {
		t.Fatalf("longest prefix: %q (%d)", n, len(n))
	}
}

func TestExecutionNameIsStableAndSeparatesItsParts(t *testing.T) {
	a := inbound.ExecutionName(nameKey, inbound.PrefixInbound, "billing", "evt_1")
	if a != inbound.ExecutionName(nameKey, inbound.PrefixInbound, "billing", "evt_1") {
		t.Fatal("the same event named twice differently")
	}
	distinct := []string{
		a,
		inbound.ExecutionName(nameKey, inbound.PrefixInbound, "ab", "c"),
		inbound.ExecutionName(nameKey, inbound.PrefixInbound, "a", "bc"),
		inbound.ExecutionName(nameKey, inbound.PrefixInbound, "billin", "gevt_1"),
		inbound.ExecutionName(nameKey, inbound.PrefixInbound, "evt_1", "billing"),
		inbound.ExecutionName([]byte("another deployment's secret"), inbound.PrefixInbound, "billing", "evt_1"),
	}
	seen := map[string]bool{}
	for _, n := range distinct {
		if seen[n] {
			t.Fatalf("two inputs share the name %q", n)
		}
		seen[n] = true
	}
	// The prefix is not in the digest: in- and sc- differ only there.
	in := inbound.ExecutionName(nameKey, inbound.PrefixInbound, "x", "y")
	sc := inbound.ExecutionName(nameKey, inbound.PrefixSchedule, "x", "y")
	if in[3:] != sc[3:] || in == sc {
		t.Fatalf("prefixes: %q %q", in, sc)
	}
}

func TestExecutionNamePanicsOnAnEmptyKeyOrABadPrefix(t *testing.T) {
	for name, f := range map[string]func(){
		"empty key":          func() { inbound.ExecutionName(nil, inbound.PrefixInbound, "a", "b") },
		"prefix with a dot":  func() { inbound.ExecutionName(nameKey, "in.", "a", "b") },
		"prefix with space":  func() { inbound.ExecutionName(nameKey, "in ", "a", "b") },
		"prefix of 49 chars": func() { inbound.ExecutionName(nameKey, "0123456789012345678901234567890123456789012345678", "a", "b") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

func TestCheckNameAdmitsTheNameRuleOnly(t *testing.T) {
	for _, ok := range []string{"a", "0", "billing", "stripe-prod", "9-lives", strings.Repeat("a", inbound.MaxNameChars)} {
		if err := inbound.CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "-billing", "Billing", "bill_ing", "bill.ing", "bill/ing", "bill ing", "billing\n", "bïlling",
		strings.Repeat("a", inbound.MaxNameChars+1)} {
		if err := inbound.CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
}

func TestSessionNamesOfTheLongestNameKeepWithinSTS(t *testing.T) {
	sts := regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	long := strings.Repeat("z", inbound.MaxNameChars)
	for _, p := range []string{inbound.SessionPrefixSource, inbound.SessionPrefixSchedule} {
		if !sts.MatchString(p + long) {
			t.Errorf("%q+name is no RoleSessionName", p)
		}
	}
}
