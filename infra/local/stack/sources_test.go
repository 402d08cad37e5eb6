package stack_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
)

// sourcesCLI runs toolgate args on the stack's sources function as local
// user who, with stdin as standard input, returning its exit code, stdout
// and stderr.
func (e *env) sourcesCLI(who string, stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	vars := maps.Clone(e.cli)
	code := cli.RunWith(append(args, "--function-endpoint", e.st.Endpoints["sources"], "--as", who),
		cli.Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars), Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin)})
	return code, out.String(), errb.String()
}

// backdateSecrets moves the created_at of source name's secrets d into the
// past, as the passing of time would: a rotation is refused within a
// proof's validity of the current secret's making, and the test does not
// wait that long.
func (e *env) backdateSecrets(t *testing.T, name string, d time.Duration) {
	t.Helper()
	db := local.DynamoDB(e.st.Dynamo.Endpoint())
	key := map[string]dynamodbtypes.AttributeValue{"pk": &dynamodbtypes.AttributeValueMemberS{Value: table.InboundSourcesPK()},
		"sk": &dynamodbtypes.AttributeValueMemberS{Value: table.InboundSourceSK(name)}}
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.Table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("source %s: %v", name, err)
	}
	secrets := out.Item["secrets"].(*dynamodbtypes.AttributeValueMemberL)
	for _, s := range secrets.Value {
		m := s.(*dynamodbtypes.AttributeValueMemberM).Value
		at, err := time.Parse(time.RFC3339, m["created_at"].(*dynamodbtypes.AttributeValueMemberS).Value)
		if err != nil {
			t.Fatal(err)
		}
		m["created_at"] = &dynamodbtypes.AttributeValueMemberS{Value: at.Add(-d).UTC().Format(time.RFC3339)}
	}
	if _, err := db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(stack.Table), Key: key,
		UpdateExpression: aws.String("SET secrets = :s"), ExpressionAttributeValues: map[string]dynamodbtypes.AttributeValue{":s": secrets}}); err != nil {
		t.Fatal(err)
	}
}

// The inbound operator manages a source through the CLI on the stack's
// sources function: add draws a secret and prints it once, and the
// receiver accepts a delivery signed with it; list shows the
// source, never a secret; a rotation right after is refused (a replayed
// proof must not draw again), and once its secret is older, rotation
// with a secret piped in keeps both verifying; retire-secrets keeps the
// newest; remove deletes it. A schedule is added, listed, paused,
// resumed and removed. Another local user is refused for both. Neither
// the drawn secret nor the given one is in any process's log or in the
// table.
func TestSourcesAndSchedulesThroughTheCLIOnTheStack(t *testing.T) {
	e := sharedEnv(t)
	solution := fresh("inbound-src")
	e.publish(t, solution, strings.ReplaceAll(webhookRun, "NAME", solution))
	name := fresh("billing")
	code, out, errOut := e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "add", "--name", name, "--scheme", "standard-webhooks", "--solution", solution, "--json")
	if code != cli.ExitOK {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	var added inboundapi.AddSourceResult
	if err := json.Unmarshal([]byte(out), &added); err != nil {
		t.Fatalf("add --json: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`).MatchString(added.Secret) || added.Source.Route != "/in/"+name || added.Source.AddedBy != local.LocalPrincipal(stack.InboundOperator) {
		t.Fatalf("added %+v", added.Source)
	}
	// The receiver verifies a delivery with the secret drawn and sealed by
	// the sources function: the secret's form and its seal are the
	// receiver's.
	key, err := webhook.ParseSecret(added.Secret)
	if err != nil {
		t.Fatalf("the drawn secret: %v", err)
	}
	if status, answer := postInbound(t, e.st, name, key, "msg_sources_1", []byte(`{"type":"invoice.paid"}`)); status != http.StatusAccepted {
		t.Fatalf("a delivery signed with the drawn secret: %d %s, want 202", status, answer)
	}
	code, out, errOut = e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "list")
	if code != cli.ExitOK || !strings.Contains(out, name+" standard-webhooks solution "+solution) || strings.Contains(out, added.Secret) {
		t.Fatalf("list: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "rotate-secret", "--name", name)
	if code != cli.ExitErrors || !strings.Contains(errOut, inboundapi.CodeRefused) || !strings.Contains(errOut, "rotate after") {
		t.Fatalf("a rotation right after the add: exit %d: %s", code, errOut)
	}
	e.backdateSecrets(t, name, 2*time.Minute)
	const given = "whsec_Z2l2ZW4tYnktdGhlLW9wZXJhdG9yLTAwMDAwMDAw"
	code, out, errOut = e.sourcesCLI(stack.InboundOperator, given+"\n", "webhooks", "source", "rotate-secret", "--name", name, "--secret-from-stdin")
	if code != cli.ExitOK || !strings.Contains(out, "the previous ones verify too until") || strings.Contains(out, given) {
		t.Fatalf("rotate-secret: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ = e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "list"); !strings.Contains(out, "2 secret(s)") {
		t.Fatalf("list after the rotation: %s", out)
	}
	if code, out, errOut = e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "retire-secrets", "--name", name); code != cli.ExitOK || !strings.Contains(out, "retired 1 secret(s)") {
		t.Fatalf("retire-secrets: exit %d: %s%s", code, out, errOut)
	}

	input := filepath.Join(e.dir, "schedule-input.json")
	if err := os.WriteFile(input, []byte(`{"canary": "schedule-input-canary"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sched := fresh("nightly")
	// A cron in 2199: nothing fires while the test runs.
	if code, out, errOut = e.sourcesCLI(stack.InboundOperator, "", "schedule", "add", "--name", sched, "--solution", solution, "--cron", "0 18 1 1 ? 2199", "--input", input); code != cli.ExitOK ||
		!strings.Contains(out, sched+" ENABLED cron(0 18 1 1 ? 2199) solution "+solution) {
		t.Fatalf("schedule add: exit %d: %s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, sched + " ENABLED"},
		{[]string{"pause", "--name", sched}, "is PAUSED"},
		{[]string{"list"}, sched + " PAUSED"},
		{[]string{"resume", "--name", sched}, "is ENABLED"},
		{[]string{"remove", "--name", sched}, "removed schedule " + sched},
	} {
		code, out, errOut := e.sourcesCLI(stack.InboundOperator, "", append([]string{"schedule"}, c.args...)...)
		if code != cli.ExitOK || !strings.Contains(out, c.want) || strings.Contains(out, "schedule-input-canary") {
			t.Fatalf("schedule %v: exit %d: %s%s", c.args, code, out, errOut)
		}
	}

	const stranger = "mallory"
	for _, args := range [][]string{
		{"webhooks", "source", "list"},
		{"webhooks", "source", "remove", "--name", name},
		{"schedule", "list"},
		{"schedule", "add", "--name", fresh("theirs"), "--solution", solution, "--rate", "1 day", "--input", input},
	} {
		code, _, errOut := e.sourcesCLI(stranger, "", args...)
		if code != cli.ExitErrors || !strings.Contains(errOut, inboundapi.CodeRefused) || !strings.Contains(errOut, "not an inbound operator") {
			t.Fatalf("%s's %v: exit %d: %s", stranger, args, code, errOut)
		}
	}
	if code, out, errOut = e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "remove", "--name", name); code != cli.ExitOK || !strings.Contains(out, "removed source "+name) {
		t.Fatalf("remove: exit %d: %s%s", code, out, errOut)
	}

	items, _ := json.Marshal(tableItems(t, e.st))
	for _, secret := range []string{added.Secret, given, "Z2l2ZW4tYnktdGhlLW9wZXJhdG9yLTAwMDAwMDAw"} {
		if bytes.Contains(items, []byte(secret)) {
			t.Errorf("the table holds a source's secret")
		}
		for _, p := range e.st.Processes() {
			if strings.Contains(p.Stdout()+p.Stderr(), secret) {
				t.Errorf("%s's log holds a source's secret", p.Name)
			}
		}
	}
	if bytes.Contains(items, []byte(`"`+table.ScheduleSK(sched)+`"`)) {
		t.Errorf("the removed schedule's item is still in the table")
	}
	all, own := functionLogs(e.st, "sources")
	if !strings.Contains(own, "inbound source added") || !strings.Contains(own, "not an inbound operator") || strings.Contains(all, "schedule-input-canary") {
		t.Errorf("the sources function's log lacks the add or the refusal, or a log holds the input:\n%s", own)
	}
}
