package webhook

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEventIDIsTheDocumentedDigest checks EventID against a value computed
// outside Go (Python's hashlib and base64 on the same input), and that it
// depends on the type and the source.
func TestEventIDIsTheDocumentedDigest(t *testing.T) {
	src := "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev-refunds:run-1\nSUCCEEDED"
	if got, want := EventID(RunSucceeded, src), "evt_4tye5rbtxbenv2n6fgtanzihiq"; got != want {
		t.Fatalf("EventID = %s, want %s", got, want)
	}
	if EventID(RunFailed, src) == EventID(RunSucceeded, src) || EventID(RunSucceeded, src+"x") == EventID(RunSucceeded, src) {
		t.Fatal("EventID ignores its type or its source")
	}
	if !IDPattern.MatchString(EventID(CallUnknown, "")) {
		t.Fatal("EventID does not match IDPattern")
	}
}

func TestParsePatterns(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "run.*,review.requested", want: []string{"run.*", "review.requested"}},
		{in: " tool.schema_changed , credentials.* ", want: []string{"tool.schema_changed", "credentials.*"}},
		{in: "run.*,run.*,call.unknown", want: []string{"run.*", "call.unknown"}},
		{in: "", err: "empty"},
		{in: "run.*,,review.*", err: "entry 2"},
		{in: "run.start", err: `entry 1 "run.start": not an event type`},
		{in: "*", err: "not an event type"},
		{in: "runs.*", err: "names no event type"},
		{in: "run.started.*", err: "names no event type"},
		{in: "Run.started", err: "not an event type"},
		{in: strings.Repeat("run.started,", 40) + "x", err: "entry 41"},
	} {
		got, err := ParsePatterns(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParsePatterns(%q) = %v, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParsePatterns(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	p := []string{"run.*", "review.requested"}
	for _, c := range []struct {
		t    Type
		want bool
	}{
		{RunStarted, true}, {RunTimedOut, true}, {ReviewRequested, true}, {ReviewDecided, false},
		{CallUnknown, false}, {Type("run"), false}, {Type("runx.started"), false},
	} {
		if got := Matches(p, c.t); got != c.want {
			t.Errorf("Matches(%v, %s) = %v", p, c.t, got)
		}
	}
	if Matches(nil, RunStarted) {
		t.Error("no pattern matched an event")
	}
}

// TestEveryPatternGroupNamesTypes checks that each group's "<group>.*"
// parses and matches exactly the group's types.
func TestEveryPatternGroupNamesTypes(t *testing.T) {
	for _, typ := range Types {
		group, _, _ := strings.Cut(string(typ), ".")
		ps, err := ParsePatterns(group + ".*")
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range Types {
			want := strings.HasPrefix(string(other), group+".")
			if Matches(ps, other) != want {
				t.Errorf("%s.* matches %s: %v", group, other, !want)
			}
		}
	}
}

func TestRunType(t *testing.T) {
	for status, want := range map[string]Type{"RUNNING": RunStarted, "SUCCEEDED": RunSucceeded, "FAILED": RunFailed, "TIMED_OUT": RunTimedOut, "ABORTED": RunAborted} {
		if got, ok := RunType(status); !ok || got != want {
			t.Errorf("RunType(%s) = %s, %v", status, got, ok)
		}
	}
	if _, ok := RunType("PENDING_REDRIVE"); ok {
		t.Error("PENDING_REDRIVE is an event")
	}
}

// TestBodyIsTheStandardEnvelope checks the POSTed body's shape: type,
// RFC 3339 timestamp in UTC and whole seconds, data compacted; no id.
func TestBodyIsTheStandardEnvelope(t *testing.T) {
	at := time.Date(2026, 12, 2, 21, 0, 0, 0, time.FixedZone("CET", 3600))
	e := Event{ID: EventID(CallUnknown, "k"), Type: CallUnknown, Timestamp: at, Data: json.RawMessage("{\n \"run\": \"r\"\n}")}
	b, err := Body(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"call.unknown","timestamp":"2026-12-02T20:00:00Z","data":{"run":"r"}}`; string(b) != want {
		t.Fatalf("Body = %s, want %s", b, want)
	}
	for _, bad := range []string{"", "[]", "null", `{"a":`} {
		e.Data = json.RawMessage(bad)
		if _, err := Body(e); err == nil {
			t.Errorf("Body accepted data %q", bad)
		}
	}
}

// samples are one valid payload of each type; TestSamplesValidate checks
// them, and the docs' examples are built from them (TestDocExamples).
func samples() map[Type]any {
	run := func(status, stop string) RunData {
		return RunData{ExecutionARN: "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev-refunds:run-1",
			StateMachineARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-dev-refunds",
			Name:            "run-1", Status: status, StartDate: "2026-12-02T20:00:00Z", StopDate: stop}
	}
	// As review-request's park route builds them (functions/review-request
	// park.go), and call.unknown as the dispatcher does (shared/dispatch,
	// events.go).
	key := "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_refunds:run-1/2"
	parked := CallData{Run: "run-1", Key: key, Tool: "crm.lookup_customer", Cause: "tool.schema_changed", Detail: "MCP tool crm.lookup_customer",
		ParkID: "pk_2fqxr4mvz7ylkz3kq5oxbm6fvq", DecideCommand: "toolgate parked approve pk_2fqxr4mvz7ylkz3kq5oxbm6fvq | toolgate parked reject pk_2fqxr4mvz7ylkz3kq5oxbm6fvq --reason TEXT"}
	expired := CallData{Run: "run-1", Key: key, Tool: "http", Cause: "credentials.expired", Detail: "target api.example.org of toolset refunds",
		ParkID: "pk_n3tqbwzq4hx7c2kqlmv5d6sxqe", DecideCommand: "toolgate credentials set ... then toolgate parked resume pk_n3tqbwzq4hx7c2kqlmv5d6sxqe"}
	unknown := CallData{Run: "run-1", Key: key, Tool: "send-email", Cause: "TOOL_TIMEOUT", Detail: "step notify"}
	return map[Type]any{
		RunStarted:   run("RUNNING", ""),
		RunSucceeded: run("SUCCEEDED", "2026-12-02T20:01:30Z"), RunFailed: run("FAILED", "2026-12-02T20:01:30Z"),
		RunTimedOut: run("TIMED_OUT", "2026-12-02T21:00:00Z"), RunAborted: run("ABORTED", "2026-12-02T20:05:00.123Z"),
		ReviewRequested: ReviewRequestedData{ReviewID: "rev_01", Solution: "refunds", Version: 3, Run: "run-1", Step: "refund",
			Tool: "http", ExpiresAt: "2026-12-03T20:00:00Z", DecideCommand: "toolgate review decide --review rev_01 --approve"},
		ReviewDecided: ReviewDecidedData{ReviewID: "rev_01", Solution: "refunds", Run: "run-1", Step: "refund", Tool: "http",
			Decision: "approved", DecidedAt: "2026-12-02T20:10:00Z"},
		ToolSchemaChanged: parked, CredentialsExpired: expired, CallUnknown: unknown,
	}
}

func TestSamplesValidate(t *testing.T) {
	now := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	s := samples()
	for _, typ := range Types {
		e, err := NewEvent(typ, "src", "refunds", s[typ], now)
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		if _, err := Body(e); err != nil {
			t.Errorf("%s: Body: %v", typ, err)
		}
	}
}

// TestValidateRefusals checks that Validate refuses what a payload must
// not hold, and that its error never quotes the value.
func TestValidateRefusals(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ev := func(typ Type, data string) Event {
		return Event{ID: EventID(typ, "s"), Type: typ, Timestamp: now, Data: json.RawMessage(data)}
	}
	good := `{"run":"run-1","key":"k","tool":"http","cause":"CAUSE"}`
	long := strings.Repeat("é", 1050) // within maxLength 2048 characters, over 2048 bytes
	for _, c := range []struct {
		name string
		e    Event
		want string
	}{
		{"unknown type", ev("run.paused", good), "unknown type"},
		{"bad id", Event{ID: "evt_X", Type: CallUnknown, Timestamp: now, Data: json.RawMessage(good)}, "id"},
		{"no timestamp", Event{ID: EventID(CallUnknown, "s"), Type: CallUnknown, Data: json.RawMessage(good)}, "timestamp"},
		{"extra field (a tool input)", ev(CallUnknown, `{"run":"run-1","key":"k","tool":"http","cause":"CAUSE","input":"CANARY-7f3a"}`), "additionalProperties"},
		{"missing field", ev(CallUnknown, `{"run":"run-1","key":"k","tool":"http"}`), "required"},
		{"status of another type", ev(RunSucceeded, `{"execution_arn":"arn:aws:states:r:1:execution:sm:n","state_machine_arn":"arn:aws:states:r:1:stateMachine:sm","name":"n","status":"FAILED","start_date":"2026-12-02T20:00:00Z","stop_date":"2026-12-02T20:00:00Z"}`), "const"},
		{"decision not approved or rejected", ev(ReviewDecided, `{"review_id":"r","solution":"s","run":"r","step":"s","tool":"t","decision":"CANARY-7f3a","decided_at":"2026-12-02T20:00:00Z"}`), "enum"},
		{"string over 2 KiB", ev(RunStarted, `{"execution_arn":"arn:aws:states:r:1:execution:sm:`+long+`","state_machine_arn":"arn:aws:states:r:1:stateMachine:sm","name":"n","status":"RUNNING","start_date":"2026-12-02T20:00:00Z"}`), "data/execution_arn is longer than 2048 bytes"},
		{"not one value", ev(CallUnknown, good+good), "not one JSON value"},
	} {
		err := Validate(c.e)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want an error saying %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "CANARY") || strings.Contains(err.Error(), "éé") {
			t.Errorf("%s: the error quotes the payload: %v", c.name, err)
		}
	}
}

// TestEverySchemaIsClosedAndNamed checks each embedded schema: one file a
// type, its title the type, objects closed.
func TestEverySchemaIsClosedAndNamed(t *testing.T) {
	entries, err := Schemas.ReadDir("schemas")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(Types) {
		t.Fatalf("%d schema files for %d types", len(entries), len(Types))
	}
	for _, typ := range Types {
		doc, err := SchemaOf(typ)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Title      string         `json:"title"`
			Additional *bool          `json:"additionalProperties"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(doc, &s); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if s.Title != string(typ) || s.Additional == nil || *s.Additional || len(s.Properties) == 0 {
			t.Errorf("%s: title %q, additionalProperties %v", typ, s.Title, s.Additional)
		}
	}
}
