package tool_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

const valid = `{"tool":"send-email","toolset_id":"ts_0123456789abcdef0123456789abcdef","run_id":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1","seq":"2","step":"send","idempotency_key":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1/2","attempt":1,"tolerate_duplicates":false,"input":{"to":["a@example.com"]},"approval":{"review_id":"r"}}`

func TestDecodeValid(t *testing.T) {
	e, err := tool.DecodeEnvelope([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != "2" || e.Tool != "send-email" || string(e.Approval) != `{"review_id":"r"}` || !strings.HasPrefix(string(e.Input), "{") {
		t.Fatalf("%+v", e)
	}
}

func TestDecodeRefuses(t *testing.T) {
	cases := []struct {
		name, in, field string
	}{
		{"not json", `nope`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"trailing", valid + `{}`, "data after"},
		{"missing input", strings.Replace(valid, `"input":{"to":["a@example.com"]},`, "", 1), `"input" is missing`},
		{"unknown field", strings.Replace(valid, `"seq":"2"`, `"seq":"2","debug":true`, 1), `"debug"`},
		{"seq fraction", strings.Replace(valid, `"seq":"2"`, `"seq":2.5`, 1), `"seq"`},
		{"seq exponent", strings.Replace(valid, `"seq":"2"`, `"seq":2e0`, 1), `"seq"`},
		{"seq negative", strings.Replace(valid, `"seq":"2"`, `"seq":-2`, 1), `"seq"`},
		{"seq bool", strings.Replace(valid, `"seq":"2"`, `"seq":true`, 1), `"seq"`},
		{"seq zero", strings.Replace(strings.Replace(valid, `"seq":"2"`, `"seq":0`, 1), "r1/2", "r1/0", 1), `"seq"`},
		{"seq leading zero", strings.Replace(strings.Replace(valid, `"seq":"2"`, `"seq":"02"`, 1), "r1/2", "r1/02", 1), `"seq"`},
		{"seq two components", strings.Replace(strings.Replace(valid, `"seq":"2"`, `"seq":"2.1"`, 1), "r1/2", "r1/2.1", 1), `"seq"`},
		{"seq counter zero in a loop", strings.Replace(strings.Replace(valid, `"seq":"2"`, `"seq":"2.1.0"`, 1), "r1/2", "r1/2.1.0", 1), `"seq"`},
		{"seq too deep", strings.Replace(strings.Replace(valid, `"seq":"2"`, `"seq":"2.0.1.0.1.0.1"`, 1), "r1/2", "r1/2.0.1.0.1.0.1", 1), `"seq"`},
		{"key of another item", strings.Replace(strings.Replace(valid, `"seq":"2"`, `"seq":"2.1.1"`, 1), "r1/2", "r1/2.0.1", 1), `"idempotency_key"`},
		{"input string", strings.Replace(valid, `"input":{"to":["a@example.com"]}`, `"input":"x"`, 1), `"input"`},
		{"approval not an object", strings.Replace(valid, `"approval":{"review_id":"r"}`, `"approval":"x"`, 1), `"approval"`},
		{"approval a list", strings.Replace(valid, `"approval":{"review_id":"r"}`, `"approval":[]`, 1), `"approval"`},
		{"approval names twice", strings.Replace(valid, `"approval":{"review_id":"r"}`, `"approval":{"review_id":"r","review_id":"rv_x"}`, 1), `"approval"`},
		// Unpaired surrogate escapes decode to U+FFFD: two would name one run.
		{"run id with an unpaired surrogate", strings.ReplaceAll(valid, "r1", `r1\ud800`), `"run_id"`},
		{"run id with a bidi override", strings.ReplaceAll(valid, "r1", `r1\u202e`), `"run_id"`},
		{"run id with a line separator", strings.ReplaceAll(valid, "r1", `r1\u2028`), `"run_id"`},
		{"key mismatch", strings.Replace(valid, "r1/2", "r1/3", 1), `"idempotency_key"`},
		{"bad toolset", strings.Replace(valid, "ts_0123", "ts_X123", 1), `"toolset_id"`},
		{"attempt bool", strings.Replace(valid, `"attempt":1`, `"attempt":true`, 1), `"attempt"`},
		{"tolerate string", strings.Replace(valid, `"tolerate_duplicates":false`, `"tolerate_duplicates":"no"`, 1), `"tolerate_duplicates"`},
		{"run start not a time", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"yesterday"`, 1), `"run_started_at"`},
		{"run start without a zone", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02T03:04:05.678"`, 1), `"run_started_at"`},
		{"run start a date", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02"`, 1), `"run_started_at"`},
		{"run start epoch number", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":1767323045`, 1), `"run_started_at"`},
		// time.Parse reads these, RFC 3339 (section 5.6) does not, and
		// Step Functions never writes them.
		{"run start with a one-digit hour", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02T3:04:05.678Z"`, 1), `"run_started_at"`},
		{"run start with a decimal comma", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02T03:04:05,678Z"`, 1), `"run_started_at"`},
		{"run start with an offset of 24 hours", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02T03:04:05.678+24:00"`, 1), `"run_started_at"`},
		// RFC 3339 allows a lower-case t and z; Step Functions writes
		// upper case, and time.Parse reads only that.
		{"run start in lower case", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02t03:04:05.678z"`, 1), `"run_started_at"`},
		{"run start too long", strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02T03:04:05.678000000000000000000Z"`, 1), `"run_started_at"`},
		{"too big", `{"x":"` + strings.Repeat("a", tool.MaxEnvelopeSize) + `"}`, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tool.DecodeEnvelope([]byte(c.in))
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tool.InputInvalid {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(te.Message, c.field) {
				t.Fatalf("message %q does not name %s", te.Message, c.field)
			}
		})
	}
}

// run_started_at is $$.Execution.StartTime as Step Functions writes it;
// an envelope without it (a definition published before it) decodes as
// before, with no run start.
func TestDecodeRunStartedAt(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2026-01-02T03:04:05.678Z", "2026-01-02T03:04:05.678Z"},
		{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"},
		{"2026-01-02T04:04:05.678+01:00", "2026-01-02T03:04:05.678Z"},
	} {
		e, err := tool.DecodeEnvelope([]byte(strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"`+c.in+`"`, 1)))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got, ok := e.RunStart()
		if !ok || got.UTC().Format(time.RFC3339Nano) != c.want {
			t.Fatalf("%s: RunStart() = %v, %v; want %s", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{valid, strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":null`, 1)} {
		e, err := tool.DecodeEnvelope([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if at, ok := e.RunStart(); ok || e.RunStartedAt != "" {
			t.Fatalf("an envelope without run_started_at has run start %v", at)
		}
	}
}

// An MCP tool's envelope names it "<server>.<tool>", the tool's name as
// its server defines it.
const validMCP = `{"tool":"crm.lookup_customer","toolset_id":"ts_0123456789abcdef0123456789abcdef","run_id":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1","seq":1,"step":"lookup","idempotency_key":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1/1","attempt":1,"tolerate_duplicates":false,"input":{"id":"c-1"}}`

func TestDecodeMCPToolName(t *testing.T) {
	e, err := tool.DecodeEnvelope([]byte(validMCP))
	if err != nil || e.Tool != "crm.lookup_customer" {
		t.Fatalf("%+v %v", e, err)
	}
	for _, name := range []string{"crm.", ".create_ticket", "CRM.create_ticket", "crm.create ticket", "crm_x.create", "crm.create/ticket",
		"c" + strings.Repeat("r", 31) + ".create", "crm." + strings.Repeat("t", 129)} {
		_, err := tool.DecodeEnvelope([]byte(strings.Replace(validMCP, `"crm.lookup_customer"`, `"`+name+`"`, 1)))
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != tool.InputInvalid || !strings.Contains(te.Message, `"tool"`) {
			t.Errorf("tool %q: %v", name, err)
		}
	}
}

// ValidToolName accepts exactly the catalog's names and what
// toolset.SplitMCPName splits.
func TestValidToolName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"send-email", true}, {"create-ticket", true}, {"test_echo", true},
		{"crm.lookup_customer", true}, {"crm.Tool.v2", true}, {"my-crm.a", true},
		{"crm." + strings.Repeat("t", 128), true}, {"c" + strings.Repeat("r", 30) + ".a", true},
		{"", false}, {"Send-email", false}, {"crm.", false}, {".a", false}, {"crm..", true},
		{"crm.a b", false}, {"crm.a/b", false}, {"1crm.a", false}, {"crm_x.a", false},
		{"crm." + strings.Repeat("t", 129), false}, {"c" + strings.Repeat("r", 31) + ".a", false},
	} {
		if got := tool.ValidToolName(c.name); got != c.ok {
			t.Errorf("ValidToolName(%q) = %v", c.name, got)
		}
		if strings.Contains(c.name, ".") {
			_, _, split := toolset.SplitMCPName(c.name)
			if split != c.ok {
				t.Errorf("%q: ValidToolName %v, toolset.SplitMCPName %v", c.name, c.ok, split)
			}
		}
	}
}

// A seq inside a for_each is "<enclosing counter>.<item index>.<the
// iteration's counter>"; a JSON number is read as the top-level seq it
// names (the contract before for_each), with the same key.
func TestDecodeSeq(t *testing.T) {
	cases := map[string]string{
		`"seq":"2"`:                   "2",
		`"seq":2`:                     "2",
		`"seq":"4.17.2"`:              "4.17.2",
		`"seq":"4.0.1"`:               "4.0.1",
		`"seq":"9223372036854775807"`: "9223372036854775807",
	}
	for member, want := range cases {
		in := strings.Replace(strings.Replace(valid, `"seq":"2"`, member, 1), "r1/2", "r1/"+want, 1)
		e, err := tool.DecodeEnvelope([]byte(in))
		if err != nil || e.Seq != tool.Seq(want) {
			t.Errorf("%s: seq %q, err %v", member, e.Seq, err)
		}
	}
}

// Sort keys order as the calls were made: 4, then loop 5's items in
// order (the call counter of each from 1), then 6; past ten digits too.
func TestSeqSortKeyOrder(t *testing.T) {
	inOrder := []tool.Seq{"1", "4", "5.0.1", "5.0.2", "5.0.10", "5.1.1", "5.9.1", "5.10.1", "5.10.2", "6", "9999999999", "10000000000"}
	for i := 1; i < len(inOrder); i++ {
		a, b := inOrder[i-1].SortKey(), inOrder[i].SortKey()
		// A call's ledger rows follow its item: "#" sorts below ".".
		if !(a < b) || !(a+"#9" < b) {
			t.Errorf("%s (%s) does not sort before %s (%s)", inOrder[i-1], a, inOrder[i], b)
		}
	}
	if tool.Seq("04").SortKey() != "" || tool.Seq("").SortKey() != "" {
		t.Error("an invalid seq has a sort key")
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(validMCP))
	f.Add([]byte(strings.Replace(validMCP, "crm.lookup_customer", "crm.a.b-c_D.9", 1)))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"seq":1e400}`))
	f.Add([]byte(strings.Replace(valid, `"attempt":1`, `"attempt":1,"run_started_at":"2026-01-02T03:04:05.678Z"`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := tool.DecodeEnvelope(data)
		if err != nil {
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tool.InputInvalid {
				t.Fatalf("error %v is not TOOL_INPUT_INVALID", err)
			}
			return
		}
		if e.Seq.Valid() != nil || e.IdempotencyKey != e.RunID+"/"+string(e.Seq) || e.Attempt < 1 || e.Input == nil {
			t.Fatalf("accepted %+v", e)
		}
		if _, ok := e.RunStart(); ok != (e.RunStartedAt != "") {
			t.Fatalf("accepted run_started_at %q, which is no RFC 3339 time", e.RunStartedAt)
		}
		if _, _, ok := toolset.SplitMCPName(e.Tool); strings.Contains(e.Tool, ".") && !ok {
			t.Fatalf("accepted tool %q, which is no MCP tool name", e.Tool)
		}
	})
}

// The member-name constants are exactly the Envelope's JSON names, in order.
func TestEnvelopeMemberNames(t *testing.T) {
	want := []string{tool.MemberTool, tool.MemberToolsetID, tool.MemberRunID, tool.MemberSeq, tool.MemberStep, tool.MemberIdempotencyKey,
		tool.MemberAttempt, tool.MemberTolerateDuplicates, tool.MemberInput, tool.MemberApproval, tool.MemberCallerProof, tool.MemberTimeoutSeconds, tool.MemberOutputLimitBytes, tool.MemberFunction, tool.MemberKeep, tool.MemberParentRunID, tool.MemberRunStartedAt, tool.MemberTrace, tool.MemberStart, tool.MemberParkID}
	if got := tool.FieldNames(tool.Envelope{}); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Envelope's JSON names %v, the constants %v", got, want)
	}
}

// withStart is the valid envelope with the start member start.
func withStart(start string) string {
	return strings.Replace(valid, `"attempt":1`, `"attempt":1,"start":`+start, 1)
}

const scopeHex = "end_user:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDecodeReadsTheStartMember(t *testing.T) {
	for name, c := range map[string]struct {
		start, starter string
		endUser        *string
	}{
		"no starter, no end user": {`{"starter":null,"end_user":null}`, "", nil},
		"a starter":               {`{"starter":"arn:aws:iam::123456789012:user/alice","end_user":null}`, "arn:aws:iam::123456789012:user/alice", nil},
		"a starter and end user":  {`{"end_user":"` + scopeHex + `","starter":"arn:aws:iam::123456789012:role/support"}`, "arn:aws:iam::123456789012:role/support", ptr(scopeHex)},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := tool.DecodeEnvelope([]byte(withStart(c.start)))
			if err != nil {
				t.Fatal(err)
			}
			if e.Start == nil || e.Start.Starter != c.starter || (e.Start.EndUser == nil) != (c.endUser == nil) || (c.endUser != nil && *e.Start.EndUser != *c.endUser) {
				t.Fatalf("start = %+v, want starter %q end user %v", e.Start, c.starter, c.endUser)
			}
		})
	}
}

func TestDecodeReadsAForkStart(t *testing.T) {
	const parent = "arn:aws:states:us-east-1:123456789012:execution:sol:run-1"
	for name, c := range map[string]struct {
		start, forkedFrom string
		rerunReads        bool
	}{
		"absent (an older Starter)": {`{"starter":null,"end_user":null}`, "", false},
		"both null":                 {`{"starter":null,"end_user":null,"forked_from":null,"rerun_reads":null}`, "", false},
		"a fork":                    {`{"starter":null,"end_user":null,"forked_from":"` + parent + `","rerun_reads":false}`, parent, false},
		"a fork rerunning reads":    {`{"starter":null,"end_user":null,"forked_from":"` + parent + `","rerun_reads":true}`, parent, true},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := tool.DecodeEnvelope([]byte(withStart(c.start)))
			if err != nil {
				t.Fatal(err)
			}
			if e.Start.ForkedFrom != c.forkedFrom || e.Start.RerunReads != c.rerunReads {
				t.Fatalf("start = %+v, want forked_from %q rerun_reads %v", e.Start, c.forkedFrom, c.rerunReads)
			}
		})
	}
}

func TestDecodeWithoutStartHasNone(t *testing.T) {
	for _, in := range []string{valid, withStart("null")} {
		e, err := tool.DecodeEnvelope([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if e.Start != nil {
			t.Fatalf("start = %+v, want none (a definition published before it)", e.Start)
		}
	}
}

func TestDecodeRefusesAMalformedStart(t *testing.T) {
	for name, c := range map[string]struct{ start, want string }{
		"unknown member":         {`{"starter":null,"end_user":null,"end_user_id":"alice"}`, `start member "end_user_id" is not starter, end_user, forked_from or rerun_reads`},
		"forked_from no ARN":     {`{"starter":null,"end_user":null,"forked_from":"run-1"}`, `"forked_from" is not an execution ARN`},
		"forked_from a number":   {`{"starter":null,"end_user":null,"forked_from":1}`, `"forked_from" is not a string or null`},
		"rerun_reads a string":   {`{"starter":null,"end_user":null,"rerun_reads":"true"}`, `"rerun_reads" is not a boolean or null`},
		"rerun_reads twice":      {`{"starter":null,"end_user":null,"rerun_reads":true,"rerun_reads":false}`, `appears twice`},
		"starter missing":        {`{"end_user":null}`, `start member "starter" is missing`},
		"end user missing":       {`{"starter":null}`, `start member "end_user" is missing`},
		"member twice":           {`{"starter":null,"end_user":null,"starter":"arn:aws:iam::123456789012:user/a"}`, `appears twice`},
		"not an object":          {`"arn:aws:iam::123456789012:user/a"`, `start is not a JSON object`},
		"empty object":           {`{}`, `is missing`},
		"starter a number":       {`{"starter":3,"end_user":null}`, `"starter" is not a string or null`},
		"starter no ARN":         {`{"starter":"alice","end_user":null}`, `"starter" is not a principal ARN`},
		"raw end-user id":        {`{"starter":"arn:aws:iam::123456789012:user/a","end_user":"alice"}`, `"end_user" is not an end-user scope`},
		"upper-case scope":       {`{"starter":"arn:aws:iam::123456789012:user/a","end_user":"` + strings.ToUpper(scopeHex) + `"}`, `"end_user" is not an end-user scope`},
		"end user, no starter":   {`{"starter":null,"end_user":"` + scopeHex + `"}`, `without a starter`},
		"end user an object":     {`{"starter":"arn:aws:iam::123456789012:user/a","end_user":{}}`, `"end_user" is not a string or null`},
		"Starter in upper case":  {`{"Starter":null,"end_user":null}`, `"starter" is missing`},
		"starter with a newline": {`{"starter":"arn:aws:iam::123456789012:user/a\n","end_user":null}`, `"starter" is not a principal ARN`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tool.DecodeEnvelope([]byte(withStart(c.start)))
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tool.InputInvalid {
				t.Fatalf("err = %v, want TOOL_INPUT_INVALID", err)
			}
			if !strings.Contains(te.Message, `envelope field "start"`) || !strings.Contains(te.Message, c.want) {
				t.Fatalf("message %q does not name the start member and say %q", te.Message, c.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// withParkID is the valid envelope with the park_id member v.
func withParkID(v string) string {
	return strings.Replace(valid, `"attempt":1`, `"attempt":1,"park_id":`+v, 1)
}

// park_id absent and park_id null are two things: a state machine that
// parks the step sends null until a park was decided (Parkable), one
// published before parking sends nothing.
func TestDecodeTellsParkIDAbsentFromNull(t *testing.T) {
	const id = "pk_abcdefghijklmnopqrstuvwxyz"
	for _, c := range []struct {
		name, in string
		parkable bool
		parkID   *string
	}{
		{"absent", valid, false, nil},
		{"null", withParkID("null"), true, nil},
		{"an id", withParkID(`"` + id + `"`), true, &[]string{id}[0]},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := tool.DecodeEnvelope([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if e.Parkable != c.parkable || (e.ParkID == nil) != (c.parkID == nil) || (c.parkID != nil && *e.ParkID != *c.parkID) {
				t.Fatalf("parkable %v, park_id %v; want %v, %v", e.Parkable, e.ParkID, c.parkable, c.parkID)
			}
		})
	}
}

func TestDecodeRefusesAParkIDOfAnotherForm(t *testing.T) {
	for name, v := range map[string]string{
		"empty":           `""`,
		"no prefix":       `"abcdefghijklmnopqrstuvwxyz"`,
		"upper case":      `"pk_ABCDEFGHIJKLMNOPQRSTUVWXYZ"`,
		"base32 digit 1":  `"pk_abcdefghijklmnopqrstuvwxy1"`,
		"too short":       `"pk_abcdefghijklmnopqrstuvwxy"`,
		"too long":        `"pk_abcdefghijklmnopqrstuvwxyza"`,
		"a review id":     `"rv_abcdefghijklmnopqrstuvwxyz"`,
		"a number":        `7`,
		"an object":       `{}`,
		"trailing a line": `"pk_abcdefghijklmnopqrstuvwxyz\n"`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tool.DecodeEnvelope([]byte(withParkID(v)))
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != tool.InputInvalid {
				t.Fatalf("err = %v, want TOOL_INPUT_INVALID", err)
			}
			if !strings.Contains(te.Message, `envelope field "park_id"`) {
				t.Fatalf("message %q does not name park_id", te.Message)
			}
		})
	}
}

// An envelope decoded and encoded again keeps its park_id member, null
// included, and one without the member stays without it.
func TestEncodeKeepsTheParkIDMember(t *testing.T) {
	for _, in := range []string{valid, withParkID("null"), withParkID(`"pk_abcdefghijklmnopqrstuvwxyz"`)} {
		e, err := tool.DecodeEnvelope([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		again, err := tool.DecodeEnvelope(out)
		if err != nil {
			t.Fatal(err)
		}
		if again.Parkable != e.Parkable || (again.ParkID == nil) != (e.ParkID == nil) {
			t.Fatalf("%s encoded as %s: parkable %v, park_id %v", in, out, again.Parkable, again.ParkID)
		}
	}
}
