package observed_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/observed"
)

const fileToolset = "ts_0123456789abcdef0123456789abcdef"

// sampleFile is a file with a whole-result shape and a per-host one.
func sampleFile(t testing.TB) *observed.File {
	t.Helper()
	return &observed.File{Toolset: fileToolset, Tools: map[string]observed.ToolShapes{
		"crm.lookup_customer": {LearnedFrom: 3, Shape: mustObserve(t, `{"id":1,"tags":["a"]}`)},
		"structured-data-fetch": {Hosts: map[string]observed.HostShape{
			"api.example.com":       {LearnedFrom: 12, Shape: mustObserve(t, `{"items":[{"n":1.5}]}`)},
			"data.example.org:8443": {LearnedFrom: 1, Shape: mustObserve(t, `[true,null]`)},
		}},
	}}
}

func TestShapesFileRoundTripsDeterministically(t *testing.T) {
	f := sampleFile(t)
	first, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := sampleFile(t).Marshal()
		if err != nil || !bytes.Equal(first, again) {
			t.Fatalf("marshal is not deterministic: %v\n%s\n%s", err, first, again)
		}
	}
	got, err := observed.ParseFile(first)
	if err != nil {
		t.Fatal(err)
	}
	back, err := got.Marshal()
	if err != nil || !bytes.Equal(first, back) {
		t.Fatalf("round trip: %v\n%s\n%s", err, first, back)
	}
	compact, err := f.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := observed.ParseFile(compact); err != nil {
		t.Fatalf("compact form refused: %v", err)
	}
	if !strings.HasSuffix(string(first), "}\n") || !strings.Contains(string(first), `"learned_from": 12`) {
		t.Fatalf("unexpected form:\n%s", first)
	}
}

func TestShapesFileRefusesWhatItDoesNotDefine(t *testing.T) {
	shape := `{"t":["object"],"m":{"id":{"t":["integer"]}}}`
	cases := map[string]string{
		"not json":             `{`,
		"unknown member":       `{"toolset":"` + fileToolset + `","tools":{},"extra":1}`,
		"member in other case": `{"Toolset":"` + fileToolset + `","tools":{}}`,
		"duplicate member":     `{"toolset":"` + fileToolset + `","toolset":"` + fileToolset + `","tools":{}}`,
		"no tools":             `{"toolset":"` + fileToolset + `"}`,
		"bad toolset id":       `{"toolset":"ts_x","tools":{}}`,
		"bad tool name":        `{"toolset":"` + fileToolset + `","tools":{"Bad Name":{"learned_from":1,"shape":` + shape + `}}}`,
		"shape and hosts":      `{"toolset":"` + fileToolset + `","tools":{"t":{"learned_from":1,"shape":` + shape + `,"hosts":{"a.example":{"learned_from":1,"shape":` + shape + `}}}}}`,
		"neither":              `{"toolset":"` + fileToolset + `","tools":{"t":{}}}`,
		"no learned_from":      `{"toolset":"` + fileToolset + `","tools":{"t":{"shape":` + shape + `}}}`,
		"bad shape":            `{"toolset":"` + fileToolset + `","tools":{"t":{"learned_from":1,"shape":{"t":["integer"],"x":1}}}}`,
		"a value in a shape":   `{"toolset":"` + fileToolset + `","tools":{"t":{"learned_from":1,"shape":{"t":["object"],"m":{"alice@example.com":{"t":["string"]}}}}}}`,
		"upper-case host":      `{"toolset":"` + fileToolset + `","tools":{"t":{"hosts":{"API.example":{"learned_from":1,"shape":` + shape + `}}}}}`,
		"host with path":       `{"toolset":"` + fileToolset + `","tools":{"t":{"hosts":{"a.example/x":{"learned_from":1,"shape":` + shape + `}}}}}`,
		"host without count":   `{"toolset":"` + fileToolset + `","tools":{"t":{"hosts":{"a.example":{"shape":` + shape + `}}}}}`,
		"empty hosts":          `{"toolset":"` + fileToolset + `","tools":{"t":{"hosts":{}}}}`,
		"trailing data":        `{"toolset":"` + fileToolset + `","tools":{}} {}`,
		"over the size bound":  `{"toolset":"` + fileToolset + `","tools":{}}` + strings.Repeat(" ", observed.MaxFileBytes),
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			if f, err := observed.ParseFile([]byte(doc)); err == nil {
				t.Fatalf("accepted: %+v", f)
			} else if strings.Contains(err.Error(), "alice") {
				t.Fatalf("error quotes the document: %v", err)
			}
		})
	}
}

func TestShapesFileMarshalRefusesBrokenFiles(t *testing.T) {
	f := sampleFile(t)
	f.Tools["x"] = observed.ToolShapes{LearnedFrom: 0, Shape: mustObserve(t, `1`)}
	if _, err := f.Marshal(); err == nil || !strings.Contains(err.Error(), "learned_from") {
		t.Fatalf("err = %v, want learned_from", err)
	}
}

func FuzzShapesFile(f *testing.F) {
	seed, err := sampleFile(f).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"toolset":"` + fileToolset + `","tools":{}}`))
	f.Add([]byte(`{"toolset":"` + fileToolset + `","tools":{"t":{"hosts":{"[::1]:80":{"learned_from":1,"shape":{"u":true}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := observed.ParseFile(data)
		if err != nil {
			return
		}
		out, err := got.Marshal()
		if err != nil {
			t.Fatalf("a file read does not write: %v", err)
		}
		again, err := observed.ParseFile(out)
		if err != nil {
			t.Fatalf("a file written does not read: %v\n%s", err, out)
		}
		if out2, _ := again.Marshal(); !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
