package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/resolver/declare"
)

// demoLock is the lock of the platform team's demo toolset
// (testdata/toolsets/demo.yaml), which platformTool registers: the same
// id, so its declarations need no call to the stack.
const demoLock = "testdata/toolsets/demo.lock.json"

// declarationsHead is how many lines of tools.d.ts the demo prints.
const declarationsHead = 12

// declarationsDemo writes the demo toolset's declarations with toolgate
// declarations, from its lock, into dir/declarations, and prints the first
// declarationsHead lines of its tools.d.ts (docs/declarations.md). A
// tools.d.ts without the Tools interface or without create-ticket, under
// its quoted name, is an error.
func declarationsDemo(dir string) error {
	out := filepath.Join(dir, "declarations")
	step("the demo toolset's declarations for its authors: %s (TypeScript) and %s (their editor's schema of a Solution on it), from its lock, offline", declare.TypeScriptFile, declare.SolutionSchemaFile)
	if _, err := toolgate("declarations", demoLock, "-o", out); err != nil {
		return err
	}
	path := filepath.Join(out, declare.TypeScriptFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Printf("  the head of %s:\n", path)
	n := 0
	for line := range strings.Lines(string(data)) {
		if n++; n > declarationsHead {
			fmt.Println("    …")
			break
		}
		fmt.Print("    " + line)
	}
	if !strings.Contains(string(data), "export interface Tools") || !strings.Contains(string(data), `"create-ticket"`) {
		return fmt.Errorf("%s declares no Tools interface with \"create-ticket\"", path)
	}
	return nil
}
