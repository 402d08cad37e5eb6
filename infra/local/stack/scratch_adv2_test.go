package stack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
)

func TestScratchPublish(t *testing.T) {
	e := startEnv(t, stack.StackOptions{DataHandler: newDataServer().handler})
	pub := func(name, yaml string) (string, int) {
		yaml = strings.ReplaceAll(yaml, "DATA", strings.TrimPrefix(e.st.DataURL, "http://"))
		path := filepath.Join(e.dir, name+".yaml")
		os.WriteFile(path, []byte(yaml), 0o644)
		return e.toolgate(t, "publish", path, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--dynamodb-endpoint", e.st.Dynamo.Endpoint())
	}
	bad := strings.Replace(reviewedDigest, "on_approve: send", "on_approve: sendx", 1)
	out, code := pub("bad", strings.Replace(bad, "TIMEOUT", "600", 1))
	t.Log("bad:", code, out)
	l, _ := e.sf.ListStateMachines(t.Context(), &sfn.ListStateMachinesInput{})
	t.Log("machines after bad:", len(l.StateMachines))
	out, code = pub("v1", strings.Replace(reviewedDigest, "TIMEOUT", "600", 1))
	t.Log("v1:", code, out)
	out, code = pub("v1", strings.Replace(reviewedDigest, "TIMEOUT", "600", 1))
	t.Log("v1 again:", code, out)
	out, code = pub("v2", strings.Replace(strings.Replace(reviewedDigest, "TIMEOUT", "700", 1), "version: 1", "version: 2", 1))
	t.Log("v2:", code, out)
	// run unpublished
	in := filepath.Join(e.dir, "in.json")
	os.WriteFile(in, []byte(`[1,2]`), 0o644)
	out, code = e.toolgate(t, "run", "nope", "--input", in, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile)
	t.Log("run unpublished:", code, out)
	out, code = e.toolgate(t, "run", "e2e-digest", "--input", in, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--wait", "--timeout", "30s")
	t.Log("run array input:", code, out)
	os.WriteFile(in, []byte(`{}`), 0o644)
	out, code = e.toolgate(t, "run", "e2e-digest", "--input", in, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--wait", "--timeout", "30s")
	t.Log("run {} input:", code, out)
	_ = time.Second
	_ = cli.ExitOK
}
