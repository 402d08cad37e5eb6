package review

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

const (
	goodParent = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_parent:run-1"
	goodChild  = `{"state_machine_arn":"arn:aws:states:us-east-1:123456789012:stateMachine:toolgate-dev_child:3","parent_run_id":"` + goodParent + `","seq":2,` +
		`"input":{"input":{"title":"t"},"meta":{"parent_run_id":"` + goodParent + `","parent_seq":2},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":"` + goodParent + `"}}`
)

// The child's meta names its parent: the record is checked against the
// member the child's Start and InitChild states read, $.meta, by its exact
// name. Go's decoder alone matches "META" or "Meta" too and keeps the last
// of them, so a payload whose meta names another parent than the one it
// records passed.
func TestDecodeChildStartReadsMetaByItsExactName(t *testing.T) {
	if _, res, rec, err := DecodeChildStart([]byte(goodChild)); err != nil || rec.ParentRunID != goodParent ||
		res.ExecutionName != tool.ChildExecutionName(goodParent, 2) ||
		res.ExecutionARN != "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_child:"+res.ExecutionName {
		t.Fatalf("%+v %+v %v", res, rec, err)
	}
	other := strings.Replace(goodChild, `"meta":{"parent_run_id":"`+goodParent+`"`, `"meta":{"parent_run_id":"arn:aws:states:us-east-1:123456789012:execution:x:other"`, 1)
	for name, payload := range map[string]string{
		"another parent in meta, this one in META": strings.Replace(other, `"AWS_STEP`, `"META":{"parent_run_id":"`+goodParent+`","parent_seq":2},"AWS_STEP`, 1),
		"meta's members in another case":           strings.Replace(goodChild, `"meta":{"parent_run_id"`, `"meta":{"Parent_Run_ID"`, 1),
		"meta's parent twice":                      strings.Replace(other, `"parent_seq":2}`, `"parent_seq":2,"parent_run_id":"`+goodParent+`"}`, 1),
	} {
		if _, _, _, err := DecodeChildStart([]byte(payload)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeChildStart(f *testing.F) {
	f.Add([]byte(goodChild))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, res, rec, err := DecodeChildStart(data)
		if err != nil {
			return
		}
		members, err := tool.DecodeObject("input", c.Input)
		if err != nil {
			t.Fatalf("accepted an input that is not an object: %v", err)
		}
		var meta struct {
			ParentRunID string `json:"parent_run_id"`
			ParentSeq   int64  `json:"parent_seq"`
		}
		m, err := tool.DecodeObject("meta", members["meta"])
		if err != nil || json.Unmarshal(m["parent_run_id"], &meta.ParentRunID) != nil || json.Unmarshal(m["parent_seq"], &meta.ParentSeq) != nil ||
			meta.ParentRunID != c.ParentRunID || meta.ParentSeq != c.Seq {
			t.Fatalf("accepted meta %s for parent %q seq %d", members["meta"], c.ParentRunID, c.Seq)
		}
		if rec.ParentRunID != c.ParentRunID || res.ExecutionName != tool.ChildExecutionName(c.ParentRunID, c.Seq) ||
			!strings.HasSuffix(res.ExecutionARN, ":"+res.ExecutionName) {
			t.Fatalf("recorded %+v named %+v for %+v", rec, res, c)
		}
		if _, digest, err := tool.InputDigest(c.Input); err != nil || digest != rec.InputDigest {
			t.Fatalf("the record's digest %s is not the input's (%v)", rec.InputDigest, err)
		}
	})
}

func FuzzDecodeChildCheck(f *testing.F) {
	f.Add([]byte(`{"execution_arn":"arn:aws:states:us-east-1:1:execution:m:n","execution_input":{"input":{},"meta":{}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		arn, digest, err := DecodeChildCheck(data)
		if err != nil {
			return
		}
		var c tool.ChildStartCheck
		if json.Unmarshal(data, &c) != nil || c.ExecutionARN != arn {
			t.Fatalf("decoded %q, the payload says %q", arn, c.ExecutionARN)
		}
		if _, want, err := tool.InputDigest(c.ExecutionInput); err != nil || want != digest {
			t.Fatalf("digest %s, want %s (%v)", digest, want, err)
		}
	})
}
