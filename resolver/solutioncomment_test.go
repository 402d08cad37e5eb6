package resolver

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/shared/solutioncomment"
)

// Every compiled definition's top-level Comment is the one
// shared/solutioncomment reads back: the Solution's name, its declared
// version and its toolset's id, as review-request names them in a
// review.requested event.
func TestTheDefinitionsCommentNamesTheSolutionVersionAndToolset(t *testing.T) {
	compiled := 0
	for _, f := range solutionFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(filepath.Base(f), src, Options{})
		if !res.OK() {
			continue
		}
		compiled++
		got, ok, err := solutioncomment.Read(bytes.NewReader(res.Definition))
		want := solutioncomment.Comment{Solution: res.Solution.Name, Version: res.Solution.Version, ToolsetID: res.Toolset.ID}
		if err != nil || !ok || got != want {
			t.Errorf("%s: the definition's Comment reads as %+v, %v, %v; want %+v", filepath.Base(f), got, ok, err, want)
		}
	}
	if compiled == 0 {
		t.Fatal("no example Solution compiled")
	}
}
