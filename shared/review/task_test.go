package review

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

const goodTask = `{"task_token":"AQCEAAAAKgAAAAMAAAAAAAAAAf","run_id":"arn:aws:states:us-east-1:123456789012:execution:weekly-digest:r1",
 "step":"approve","of":"send","tool":"send-email","toolset_id":"ts_f7826302d51ea15dba1ab8b9cf962a58",
 "input":{"to":["team@example.com"],"subject":"Weekly digest","text":"Three items."},
 "reviewers":["arn:aws:sts::*:assumed-role/newsletter-editors/*"],"timeout_seconds":259200,
 "requester":"arn:aws:iam::123456789012:role/authors"}`

func TestDecodeTask(t *testing.T) {
	r, err := DecodeTask([]byte(goodTask))
	if err != nil {
		t.Fatal(err)
	}
	_, digest, _ := tool.InputDigest(json.RawMessage(`{"subject":"Weekly digest","text":"Three items.","to":["team@example.com"]}`))
	if r.ID != IDForToken("AQCEAAAAKgAAAAMAAAAAAAAAAf") || r.Of != "send" || r.Step != "approve" || r.TimeoutSeconds != 259200 ||
		r.InputDigest != digest || string(r.Input) != `{"subject":"Weekly digest","text":"Three items.","to":["team@example.com"]}` ||
		len(r.Reviewers) != 1 || r.Status != Pending || r.Requester != "arn:aws:iam::123456789012:role/authors" {
		t.Fatalf("%+v", r)
	}
	edit := func(from, to string) string { return strings.Replace(goodTask, from, to, 1) }
	for name, c := range map[string]struct{ payload, want string }{
		"missing field":       {edit(`"timeout_seconds":259200`, `"x":1`), `"timeout_seconds" is missing`},
		"unknown field":       {edit(`"step":"approve",`, `"step":"approve","extra":1,`), `"extra" is not part`},
		"null field":          {edit(`"reviewers":["arn:aws:sts::*:assumed-role/newsletter-editors/*"]`, `"reviewers":null`), `must not be null`},
		"field twice":         {edit(`"step":"approve",`, `"step":"approve","step":"x",`), `appears twice`},
		"empty token":         {edit(`"AQCEAAAAKgAAAAMAAAAAAAAAAf"`, `""`), `task_token is empty`},
		"long token":          {edit(`"AQCEAAAAKgAAAAMAAAAAAAAAAf"`, `"`+strings.Repeat("A", 1025)+`"`), `over 1024`},
		"zero timeout":        {edit(`259200`, `0`), `outside 1..31536000`},
		"timeout over a year": {edit(`259200`, `31536001`), `outside 1..31536000`},
		"reviewer not an ARN": {edit(`"arn:aws:sts::*:assumed-role/newsletter-editors/*"`, `"alice"`), `IAM principal ARN pattern`},
		"input not an object": {edit(`"input":{"to":["team@example.com"],"subject":"Weekly digest","text":"Three items."}`, `"input":"x"`), `JSON object`},
		"inexact number":      {edit(`"text":"Three items."`, `"n":9007199254740993`), `IEEE 754`},
		"bad toolset id":      {edit(`ts_f7826302d51ea15dba1ab8b9cf962a58`, `ts_x`), `not a toolset id`},
		"bad step":            {edit(`"of":"send"`, `"of":"Send!"`), `not a step id`},
		"bad tool":            {edit(`"tool":"send-email"`, `"tool":"crm."`), `not a tool name`},
		"trailing data":       {goodTask + `{}`, `after its JSON object`},
		"not an object":       {`[]`, `not a JSON object`},
	} {
		_, err := DecodeTask([]byte(c.payload))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", name, err, c.want)
		}
	}
}

// A review of an MCP tool's call names the tool "<server>.<tool>", as the
// envelope does (tool.ValidToolName).
func TestDecodeTaskMCPTool(t *testing.T) {
	r, err := DecodeTask([]byte(strings.Replace(goodTask, `"tool":"send-email"`, `"tool":"crm.create_ticket"`, 1)))
	if err != nil || r.Tool != "crm.create_ticket" {
		t.Fatalf("%+v %v", r, err)
	}
}

func FuzzDecodeTask(f *testing.F) {
	f.Add([]byte(goodTask))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"task_token":"t","run_id":"r","step":"a","of":"b","tool":"c","toolset_id":"ts_00000000000000000000000000000000","input":{"n":1e2},"reviewers":[],"timeout_seconds":1}`))
	f.Add([]byte(strings.TrimSuffix(goodTask, "}") + `,"traceparent":null}`))
	f.Add([]byte(strings.TrimSuffix(goodTask, "}") + `,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`))
	f.Add([]byte(showTask))
	f.Add([]byte(strings.TrimSuffix(goodTask, "}") + `,"kind":"call","ask":{"enum":[1]},"editable":["text"],"notify":["ops@example.com"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTask(data)
		if err != nil {
			return
		}
		if r.Shows() != (r.Of == "" && r.Tool == "") || (r.Shows() && len(r.Editable) > 0) || len(r.Ask) > tool.MaxAskSchemaBytes ||
			len(r.Editable) > tool.MaxEditable || len(r.Notify) > tool.MaxNotify {
			t.Fatalf("accepted kind %q, of %q, tool %q, %d editable, ask %d bytes, %d notify", r.Kind, r.Of, r.Tool, len(r.Editable), len(r.Ask), len(r.Notify))
		}
		if len(r.Traceparent) > tool.MaxTraceparentLength {
			t.Fatalf("kept a traceparent of %d characters", len(r.Traceparent))
		}
		if !ValidID(r.ID) || r.ID != IDForToken(r.TaskToken) || r.TimeoutSeconds < 1 || r.TimeoutSeconds > MaxTimeout {
			t.Fatalf("accepted %+v", r)
		}
		if _, digest, err := tool.InputDigest(r.Input); err != nil || digest != r.InputDigest {
			t.Fatalf("the canonical input does not digest to its digest: %v", err)
		}
	})
}

func FuzzDecodeStart(f *testing.F) {
	f.Add([]byte(`{"start_proof":"https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity","execution_arn":"arn:aws:states:us-east-1:1:execution:m:n","start_time":"2026-12-01T00:00:00.000Z"}`))
	f.Add([]byte(`{"start_proof":"p","execution_arn":"a","start_time":"x","extra":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, started, err := DecodeStart(data)
		if err != nil {
			return
		}
		if started.IsZero() && c.StartTime != "0001-01-01T00:00:00Z" {
			t.Fatalf("accepted start_time %q as zero", c.StartTime)
		}
		var again tool.StartCheck
		if json.Unmarshal(data, &again) != nil || again != *c {
			t.Fatalf("decoded %+v, the payload says %+v", c, again)
		}
	})
}

// A start Task's payload is decoded as strictly as a review Task's.
func TestDecodeStartIsStrict(t *testing.T) {
	good := `{"start_proof":"p","execution_arn":"arn:aws:states:us-east-1:1:execution:m:n","start_time":"2026-12-01T00:00:00.000Z"}`
	if _, _, err := DecodeStart([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for name, payload := range map[string]string{
		"a null proof":       strings.Replace(good, `"p"`, `null`, 1),
		"a missing member":   `{"start_proof":"p","execution_arn":"a"}`,
		"another member":     strings.Replace(good, `{`, `{"x":1,`, 1),
		"a member twice":     strings.Replace(good, `{`, `{"start_proof":"q",`, 1),
		"a member in upper":  strings.Replace(good, `"start_proof"`, `"START_PROOF"`, 1),
		"a time not RFC3339": strings.Replace(good, `2026-12-01T00:00:00.000Z`, `yesterday`, 1),
	} {
		if _, _, err := DecodeStart([]byte(payload)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A review Task's payload must be valid UTF-8, its task token included.
func TestDecodeTaskRefusesInvalidUTF8(t *testing.T) {
	if _, err := DecodeTask([]byte("{\"task_token\":\"AQ\xffCE\"}")); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("a task token that is not UTF-8: %v", err)
	}
}

// A Starter's and a child's start check take an execution ARN only, as
// ParseExecutionARN reads one: "arn:" and anything, a state machine's ARN
// or a version's is refused before any record is read.
func TestStartChecksTakeAnExecutionARNOnly(t *testing.T) {
	const good = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_x:run-1"
	payload := func(arn string) []byte {
		return []byte(`{"check":"` + tool.RunStartCheckName + `","execution_arn":"` + arn + `","execution_input":{"input":{},"meta":{}},"start_time":"2026-01-01T00:00:00Z"}`)
	}
	child := func(arn string) []byte {
		return []byte(`{"execution_arn":"` + arn + `","execution_input":{"input":{},"meta":{}},"start_time":"2026-01-01T00:00:00Z"}`)
	}
	if arn, _, _, err := DecodeRunStartCheck(payload(good)); err != nil || arn != good {
		t.Fatalf("DecodeRunStartCheck(%s) = %q, %v", good, arn, err)
	}
	if c, err := DecodeChildCheck(child(good)); err != nil || c.ExecutionARN != good {
		t.Fatalf("DecodeChildCheck(%s) = %+v, %v", good, c, err)
	}
	for _, arn := range []string{"arn:x", "arn:aws:states:us-east-1:123456789012:stateMachine:toolgate-dev_x",
		"arn:aws:states:us-east-1:123456789012:stateMachine:toolgate-dev_x:1", "arn:aws:states:us-east-1:1:execution:m:n",
		"arn:aws:iam::123456789012:user/x", good + ":extra"} {
		if _, _, _, err := DecodeRunStartCheck(payload(arn)); err == nil || !strings.Contains(err.Error(), "is not an execution ARN") {
			t.Errorf("DecodeRunStartCheck(%s): %v", arn, err)
		}
		if _, err := DecodeChildCheck(child(arn)); err == nil || !strings.Contains(err.Error(), "is not an execution ARN") {
			t.Errorf("DecodeChildCheck(%s): %v", arn, err)
		}
	}
}
