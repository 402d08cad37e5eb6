package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/declare"
	"github.com/toolgate/toolgate/shared/observed"
	observeddynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/toolset"
)

// smsTool is the demo MCP server's tool that declares no output schema
// (its lock pins {}): mcp-call learns the shape of its results.
const smsTool = "crm.send_sms"

// smsSolution sends one SMS over MCP, on the mcp-demo toolset (DEMO_TOOLSET_ID).
const smsSolution = `solution: demo-sms
version: 1
toolset: DEMO_TOOLSET_ID
steps:
  - id: sms
    tool: crm.send_sms
    with: {to: "+15550100", text: "demo: the shape of this result is learned, never its text"}
`

// observedShapes runs make run's observed-shapes section after mcpTools
// registered the mcp-demo toolset (its lock in st.Dir/toolsets): a run
// calls crm.send_sms, whose output schema is {}, so mcp-call learns the
// shape of its result (docs/declarations.md, "Observed shapes"); the
// section reads that shape from the local table under the identity the
// dispatcher keys it by (toolset.Tool.ShapeIdentity: the tool, "mcp:" and
// its server's origin and name, no output schema digest), and prints the @observed type
// tools.d.ts declares with it (observedDeclaration).
func observedShapes(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	dir := filepath.Join(st.Dir, "toolsets")
	lockPath := filepath.Join(dir, "mcp-demo.lock.json")
	data, err := os.ReadFile(lockPath)
	if err != nil {
		return err
	}
	ts, err := toolset.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", lockPath, err)
	}
	pinned, ok := ts.Tools[smsTool]
	if !ok || pinned.MCP == nil {
		return fmt.Errorf("the mcp-demo lock pins no MCP tool %s", smsTool)
	}
	step("observed shapes: a run calls %s, which declares no output schema, and mcp-call learns its result's shape", smsTool)
	solution := filepath.Join(dir, "demo-sms.yaml")
	if err := os.WriteFile(solution, []byte(strings.ReplaceAll(smsSolution, "DEMO_TOOLSET_ID", ts.ID)), 0o644); err != nil {
		return err
	}
	if _, err := toolgate("publish", solution, "--toolsets", dir, "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	input := filepath.Join(st.Dir, "sms-input.json")
	if err := os.WriteFile(input, []byte("{}\n"), 0o644); err != nil {
		return err
	}
	// The identity the dispatcher keys the shape by: the same rule.
	id, _, learns := pinned.ShapeIdentity(smsTool)
	if !learns {
		return fmt.Errorf("%s learns no shape", smsTool)
	}
	store := observeddynamo.New(local.DynamoDB(st.Dynamo.Endpoint()), stack.Table)
	// Learning is bounded by dispatch.LearnTimeout (50 ms) and drops an
	// update it cannot make in time, to learn it at the next call: a
	// cold local stack may need a second run.
	var learned []observeddynamo.Listed
	runs := 0
	for ; runs < 3 && len(learned) == 0; runs++ {
		arn, err := startRun(st, "demo-sms", input, fmt.Sprintf("sms-%d-%d", time.Now().Unix(), runs))
		if err != nil {
			return err
		}
		outcome, err := follow(ctx, sf, arn, time.Minute, true)
		if err != nil {
			return err
		}
		if outcome.Status != "SUCCEEDED" {
			return fmt.Errorf("the SMS run ended %s, want SUCCEEDED", outcome.Status)
		}
		if learned, _, err = store.List(ctx, id); err != nil {
			return fmt.Errorf("read the learned shape of %s: %w", smsTool, err)
		}
	}
	if len(learned) == 0 {
		return fmt.Errorf("mcp-call learned no shape of %s's result in %d runs", smsTool, runs)
	}
	fmt.Printf("  the shape item of %s (learned_from %d) holds types and member names only; tools.d.ts declares it:\n", smsTool, learned[0].LearnedFrom)
	file := &observed.File{Toolset: ts.ID, Tools: map[string]observed.ToolShapes{smsTool: {LearnedFrom: learned[0].LearnedFrom, Shape: learned[0].Shape}}}
	lines, err := observedDeclaration(lockPath, file, filepath.Join(st.Dir, "observed"), smsTool)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Println("    " + l)
	}
	return nil
}

// observedDeclaration writes shapes as a shapes file in dir, runs
// toolgate declarations on the lock with --shapes, and returns the lines
// of tools.d.ts that declare tool's output: its JSDoc, which must say
// @observed, and its type. An error when the declaration is not there.
func observedDeclaration(lockPath string, shapes *observed.File, dir, tool string) ([]string, error) {
	data, err := shapes.Marshal()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	shapesPath := filepath.Join(dir, "mcp-demo.shapes.json")
	if err := os.WriteFile(shapesPath, data, 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "declarations")
	if _, err := toolgate("declarations", lockPath, "--shapes", shapesPath, "-o", out); err != nil {
		return nil, err
	}
	tsd, err := os.ReadFile(filepath.Join(out, declare.TypeScriptFile))
	if err != nil {
		return nil, err
	}
	// The tool's member, from its name to its closing "  };".
	all := strings.Split(string(tsd), "\n")
	start := -1
	for i, l := range all {
		if l == "  "+fmt.Sprintf("%q", tool)+": {" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%s declares no %s", declare.TypeScriptFile, tool)
	}
	var lines []string
	in := false
	for _, l := range all[start+1:] {
		if l == "  };" {
			break
		}
		if strings.HasPrefix(l, "    /**") && !in {
			lines = lines[:0]
		}
		if strings.HasPrefix(l, "    input:") {
			in = true
		}
		if in && strings.HasPrefix(l, "    };") {
			in = false
			lines = lines[:0]
			continue
		}
		if !in {
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "@observed learned from") || !strings.Contains(text, "output: ") {
		return nil, fmt.Errorf("%s declares no @observed output of %s:\n%s", declare.TypeScriptFile, tool, text)
	}
	return lines, nil
}
