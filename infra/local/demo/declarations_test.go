package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/resolver/declare"
)

// TestDeclarationsDemoWritesTheDemoToolsetsDeclarations runs make run's
// declarations section alone: it needs no stack, only the demo toolset's
// lock, and writes both renderings.
func TestDeclarationsDemoWritesTheDemoToolsetsDeclarations(t *testing.T) {
	t.Chdir("../../..") // the demo runs from the repository's root
	dir := t.TempDir()
	if err := declarationsDemo(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{declare.TypeScriptFile, declare.SolutionSchemaFile} {
		if info, err := os.Stat(filepath.Join(dir, "declarations", name)); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}
