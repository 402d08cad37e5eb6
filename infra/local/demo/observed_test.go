package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/mcptool"
	"github.com/toolgate/toolgate/shared/observed"
)

// TestObservedDeclarationPrintsTheLearnedOutputType runs the offline
// half of make run's observed-shapes section: a shape learned from one
// send_sms result, declared through toolgate declarations --shapes on
// the mcp-demo lock, gives crm.send_sms an @observed output type, and
// the lines printed hold no value of the result.
func TestObservedDeclarationPrintsTheLearnedOutputType(t *testing.T) {
	t.Chdir("../../..") // the demo runs from the repository's root
	shape, err := observed.Observe(json.RawMessage(`{"content":[{"type":"text","text":"message 1 sent to +15550100"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	file := &observed.File{Toolset: "ts_e1e573600c23257d461a3f2d29e2aa3d", Tools: map[string]observed.ToolShapes{smsTool: {LearnedFrom: 1, Shape: shape}}}
	lines, err := observedDeclaration("testdata/toolsets/mcp-demo.lock.json", file, t.TempDir(), smsTool)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	t.Logf("\n%s", text)
	if !strings.Contains(text, "@observed learned from 1 result") || !strings.Contains(text, `"content": {`) || strings.Contains(text, "+15550100") || strings.Contains(text, "input:") {
		t.Errorf("the printed declaration:\n%s", text)
	}
}

// TestObservedShapesSectionOnTheStack runs make run's MCP section and
// its observed-shapes section on a local stack: mcp-call learns
// crm.send_sms's result shape, the section reads it from the table and
// prints its @observed type. It starts the stack (minutes).
func TestObservedShapesSectionOnTheStack(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	st, err := stack.StartStack(t.Context(), stack.StackOptions{Env: map[string]string{mcptool.EnvSchemaTTLSeconds: "0"}, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		st.Stop()
		os.RemoveAll(st.Dir) // its functions' bootstraps, hundreds of MB
	}()
	for k, v := range st.Environ() {
		t.Setenv(k, v) // as run does: the CLI reads the stack's keys from it
	}
	sf := sfn.New(sfn.Options{BaseEndpoint: aws.String(st.SFN.Endpoint()), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	if err := mcpTools(t.Context(), st, sf); err != nil {
		t.Fatal(err)
	}
	if err := observedShapes(t.Context(), st, sf); err != nil {
		t.Fatal(err)
	}
}
