package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/tool"
)

// DecodeTask parses a review Task's payload strictly: every field present
// and not null, no other field, no field twice, and returns the review it
// asks for (its id derived from the task token).
func DecodeTask(data []byte) (*Review, error) {
	if len(data) > MaxInputBytes+64<<10 {
		return nil, fmt.Errorf("review request is %d bytes, too large", len(data))
	}
	var p tool.ReviewTask
	if err := decodeTask("review request", "the review Task's payload", data, &p); err != nil {
		return nil, err
	}
	if p.TaskToken == "" {
		return nil, errors.New("review request: task_token is empty")
	}
	return New(Params{
		ID: IDForToken(p.TaskToken), TaskToken: p.TaskToken, RunID: p.RunID, Step: p.Step, Of: p.Of, Tool: p.Tool,
		ToolsetID: p.ToolsetID, Input: p.Input, Reviewers: p.Reviewers, TimeoutSeconds: p.TimeoutSeconds, Requester: p.Requester,
	})
}

// decodeTask decodes a compiled Task's payload into v (a contract struct
// of shared/tool) strictly: valid UTF-8, members by their exact names,
// once each, every field present and not null, no other.
func decodeTask(what, payload string, data []byte, v any) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	seen, err := tool.DecodeObject(what, data)
	if err != nil {
		return err
	}
	for _, f := range tool.FieldNames(v) {
		m, ok := seen[f]
		if !ok && tool.Optional(v, f) {
			continue
		}
		if !ok {
			return fmt.Errorf("%s field %q is missing", what, f)
		}
		if string(bytes.TrimSpace(m)) == "null" {
			return fmt.Errorf("%s field %q must not be null", what, f)
		}
		delete(seen, f)
	}
	for k := range seen {
		return fmt.Errorf("%s field %q is not part of %s", what, Truncate(k, 40), payload)
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// DecodeStart parses a start Task's payload strictly (as DecodeTask):
// every field of tool.StartCheck present, once, not null, and no other;
// start_time RFC 3339.
func DecodeStart(payload []byte) (*tool.StartCheck, time.Time, error) {
	var c tool.StartCheck
	if err := decodeTask("start check", "the start Task's payload", payload, &c); err != nil {
		return nil, time.Time{}, err
	}
	started, err := time.Parse(time.RFC3339Nano, c.StartTime)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start check: start_time %q is not RFC 3339", Truncate(c.StartTime, 40))
	}
	return &c, started, nil
}
