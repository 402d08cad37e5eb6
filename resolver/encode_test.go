package resolver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// encodeJSONBoth writes what json.Encoder with SetIndent("", "  ") and no
// HTML escaping writes, and a compact form whose size is DeployedSize's,
// for every example Solution's definition: the quota check may measure the
// compact form instead of compacting the indented text again.
func TestEncodeJSONBothIsTheEncodersTextAndItsCompactForm(t *testing.T) {
	checked := 0
	for _, f := range solutionFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(filepath.Base(f), src, Options{})
		if !res.OK() {
			continue
		}
		var def any
		if err := json.Unmarshal(res.Definition, &def); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(def); err != nil {
			t.Fatal(err)
		}
		indented, compact, err := encodeJSONBoth(def)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(indented, want.Bytes()) || !bytes.Equal(indented, res.Definition) {
			t.Errorf("%s: the indented text differs from json.Encoder's", f)
		}
		placeholders := map[string]string{"FunctionReviewRequest": "", "FunctionSendEmail": "", "FunctionStructuredDataFetch": ""}
		size, err := DeployedSize(indented, placeholders)
		if err != nil {
			t.Fatal(err)
		}
		if got := compactSize(bytes.TrimSuffix(compact, []byte("\n")), placeholders); got != size {
			t.Errorf("%s: compact size %d, DeployedSize %d", f, got, size)
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d example Solutions compile", checked)
	}
}
