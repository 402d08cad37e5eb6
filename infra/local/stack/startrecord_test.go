package stack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// A gated run's start is the record toolgate run asks review-request's
// start alias for before it starts the execution, and the Starter finds
// it by $$.Execution.Id (docs/identity.md, "Four eyes"). On the whole
// local stack:
//   - no caller proof reaches the execution's history, the ledger table or
//     any function's log (a canary: the starter's access key id and the
//     query parameters every proof carries);
//   - a second person cannot inherit the recorded starter: their start
//     request for the same name is refused, and an execution of that name
//     started with their own input is refused by the Starter;
//   - an execution started after the record's deadline is refused (the
//     record written by review-request's code with an injected clock);
//   - the Starter of a version published before start records, which
//     sends the start proof from the execution input, still starts its
//     run, so that executions in flight across the upgrade finish; and a
//     run started as the previous toolgate run did, against a version
//     published now, is refused with the way out.
func TestRunStartIsRecordedBeforeTheExecutionAndNoProofIsKept(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-start-record", digestAs("e2e-start-record", "600"))
	machine := "arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-local_e2e-start-record"
	execution := func(name string) string {
		return "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_e2e-start-record:" + name
	}
	creds, err := e.keys(t).Credentials(starter)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(b caller.Binding) string {
		p, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, e.st.STS.Endpoint(), local.Region, b, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	reviews := dynamo.NewStore(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table)
	body := func(recipient string) string {
		return fmt.Sprintf(`{"input":{"recipient":%q},"meta":{}}`, recipient)
	}
	digest := func(b string) string {
		_, d, err := tool.InputDigest(json.RawMessage(b))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	startRaw := func(name, input string) string {
		out, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String(name), Input: aws.String(input)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ExecutionArn)
	}

	var run string
	t.Run("no proof in the history, the ledger table or a log", func(t *testing.T) {
		run = e.start(t, "e2e-start-record", map[string]string{"recipient": "team@example.com"})
		e.decide(t, "reject", e.pending(t, run, nil))
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
		}
		// The canary finds a proof: every proof names the signer's access
		// key id and carries these parameters.
		canaries := []string{creds.AccessKeyID, "X-Amz-Signature", "X-Amz-Credential"}
		for _, c := range canaries {
			if !strings.Contains(sign(caller.Binding{Action: caller.ActionStart, Target: run}), c) {
				t.Fatalf("the canary %q is not in a proof", c)
			}
		}
		var history bytes.Buffer
		var token *string
		for {
			h, err := e.sf.GetExecutionHistory(t.Context(), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run), NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(h.Events)
			history.Write(b)
			if token = h.NextToken; token == nil {
				break
			}
		}
		// The Starter read the record: the history shows its check of the
		// whole input, and the record its starter and digest.
		if !strings.Contains(history.String(), `\"check\":\"run.start\"`) || !strings.Contains(history.String(), local.LocalPrincipal(starter)) {
			t.Fatalf("the history shows no Starter check: %.600s", history.String())
		}
		items, err := local.DynamoDB(e.st.Dynamo.Endpoint()).Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(stack.Table)})
		if err != nil {
			t.Fatal(err)
		}
		var plain []map[string]any
		if err := attributevalue.UnmarshalListOfMaps(items.Items, &plain); err != nil {
			t.Fatal(err)
		}
		var table bytes.Buffer
		for _, it := range plain {
			b, _ := json.Marshal(it)
			table.Write(append(b, '\n'))
		}
		if !strings.Contains(table.String(), "START#"+run) || !strings.Contains(table.String(), `"deadline"`) {
			t.Fatalf("no start record of %s", run)
		}
		var logs bytes.Buffer
		for _, p := range e.st.Processes() {
			logs.WriteString(p.Stdout())
			logs.WriteString(p.Stderr())
		}
		if !strings.Contains(logs.String(), "run start recorded") || !strings.Contains(logs.String(), "run start verified") {
			t.Fatal("the functions' logs hold no start record lines: not the logs of this run")
		}
		for where, text := range map[string]string{"the execution's history": history.String(), "the ledger table": table.String(), "the functions' logs": logs.String()} {
			for _, c := range canaries {
				if strings.Contains(text, c) {
					t.Errorf("%s holds %q: a caller proof", where, c)
				}
			}
		}
	})

	t.Run("a second person cannot inherit the recorded starter", func(t *testing.T) {
		if run == "" {
			t.Skip("no first run")
		}
		// Their toolgate run under the recorded name: the put fails, and
		// nothing is started.
		name := run[strings.LastIndex(run, ":")+1:]
		path := filepath.Join(e.dir, "mallory.json")
		os.WriteFile(path, []byte(`{"recipient": "mallory@example.com"}`), 0o644)
		var out, errb bytes.Buffer
		code := e.cliRun([]string{"run", "e2e-start-record", "--input", path, "--name", name, "--endpoint", e.st.SFN.Endpoint(),
			"--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", "mallory"}, &out, &errb)
		if code != cli.ExitErrors || !strings.Contains(errb.String(), "["+request.ReasonStartRecorded+"]") || !strings.Contains(errb.String(), "nothing was started") {
			t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
		}
		if got, err := reviews.Starter(t.Context(), run); err != nil || got != local.LocalPrincipal(starter) {
			t.Fatalf("the record of %s names %q (%v)", run, got, err)
		}
		// The starter records a start; someone else starts an execution of
		// that name with their own input: the Starter refuses it.
		other := fresh("inherited")
		recordStart(t, e, execution(other), digest(body("team@example.com")), sign(review.StartBinding(execution(other), digest(body("team@example.com")))))
		got := e.finish(t, startRaw(other, body("mallory@example.com")))
		if got.Status != "FAILED" || got.Error != string(review.CodeUnauthenticated) || !strings.Contains(got.Cause, "["+request.ReasonStartInput+"]") {
			t.Fatalf("%s %s %s, want FAILED %s [%s]", got.Status, got.Error, got.Cause, review.CodeUnauthenticated, request.ReasonStartInput)
		}
	})

	t.Run("a start after the deadline is refused", func(t *testing.T) {
		// review-request's own code, its clock two minutes behind: the
		// record's deadline is a minute before the execution starts.
		verifier := startVerifier(t, e)
		db := local.DynamoDB(e.st.Dynamo.Endpoint())
		h := request.NewHandler(request.Config{Lane: lane.Start, Callers: caller.Config{Account: local.LocalAccountID}, Region: local.Region, Stage: stack.Stage},
			request.Deps{Store: dynamo.NewStore(db, stack.Table).WithClock(func() time.Time { return time.Now().Add(-2 * time.Minute) }),
				Callers: verifier, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		late := fresh("late")
		d := digest(body("team@example.com"))
		payload, _ := json.Marshal(review.StartRequest{Action: review.StartAction, ExecutionARN: execution(late), InputDigest: d,
			Proof: sign(review.StartBinding(execution(late), d))})
		if _, err := h.Handle(t.Context(), payload); err != nil {
			t.Fatal(err)
		}
		got := e.finish(t, startRaw(late, body("team@example.com")))
		if got.Status != "FAILED" || got.Error != string(review.CodeUnauthenticated) || !strings.Contains(got.Cause, "["+request.ReasonStartLate+"]") {
			t.Fatalf("%s %s %s, want FAILED %s [%s]", got.Status, got.Error, got.Cause, review.CodeUnauthenticated, request.ReasonStartLate)
		}
		// In time, the same record kind starts the run.
		onTime := fresh("on-time")
		recordStart(t, e, execution(onTime), d, sign(review.StartBinding(execution(onTime), d)))
		arn := startRaw(onTime, body("team@example.com"))
		e.decide(t, "reject", e.pending(t, arn, nil))
		if got := e.finish(t, arn); got.Status != "SUCCEEDED" {
			t.Fatalf("on time: %s %s %s", got.Status, got.Error, got.Cause)
		}
	})

	t.Run("the previous start proof shape still starts runs in flight", func(t *testing.T) {
		// A version as published before start records: its Start Choice
		// requires meta.start_proof, its Starter sends it.
		d, err := e.sf.DescribeStateMachine(t.Context(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(machine)})
		if err != nil {
			t.Fatal(err)
		}
		var def map[string]any
		if err := json.Unmarshal([]byte(aws.ToString(d.Definition)), &def); err != nil {
			t.Fatal(err)
		}
		states := def["States"].(map[string]any)
		starterState := states["Starter"].(map[string]any)
		starterState["Parameters"].(map[string]any)["Payload"] = map[string]any{
			"start_proof.$": "$$.Execution.Input.meta.start_proof", "execution_arn.$": "$$.Execution.Id", "start_time.$": "$$.Execution.StartTime"}
		choices := states["Start"].(map[string]any)["Choices"].([]any)
		gate := choices[len(choices)-1].(map[string]any)
		gate["And"] = append(gate["And"].([]any), map[string]any{"Variable": "$.meta.start_proof", "IsPresent": true})
		legacy, _ := json.Marshal(def)
		created, err := e.sf.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String("toolgate-local_" + fresh("legacy-digest")),
			RoleArn: aws.String(stack.ExecRoleARN), Definition: aws.String(string(legacy))})
		if err != nil {
			t.Fatal(err)
		}
		inFlight := fresh("in-flight")
		arn := strings.Replace(aws.ToString(created.StateMachineArn), ":stateMachine:", ":execution:", 1) + ":" + inFlight
		input, _ := json.Marshal(map[string]any{"input": map[string]any{"recipient": "team@example.com"},
			"meta": map[string]any{"start_proof": sign(caller.Binding{Action: caller.ActionStart, Target: arn})}})
		out, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: created.StateMachineArn, Name: aws.String(inFlight), Input: aws.String(string(input))})
		if err != nil || aws.ToString(out.ExecutionArn) != arn {
			t.Fatalf("%v %v", out, err)
		}
		e.decide(t, "reject", e.pending(t, arn, nil))
		if got := e.finish(t, arn); got.Status != "SUCCEEDED" {
			t.Fatalf("%s %s %s", got.Status, got.Error, got.Cause)
		}
		if got, err := reviews.Starter(t.Context(), arn); err != nil || got != local.LocalPrincipal(starter) {
			t.Fatalf("the Starter recorded %q (%v)", got, err)
		}

		// The previous toolgate run against a version published now: a
		// start proof in meta, no record.
		oldCLI := fresh("old-cli")
		old, _ := json.Marshal(map[string]any{"input": map[string]any{"recipient": "team@example.com"},
			"meta": map[string]any{"start_proof": sign(caller.Binding{Action: caller.ActionStart, Target: execution(oldCLI)})}})
		got := e.finish(t, startRaw(oldCLI, string(old)))
		if got.Status != "FAILED" || got.Error != string(review.CodeUnauthenticated) || !strings.Contains(got.Cause, "start runs with the current toolgate") {
			t.Fatalf("%s %s %s, want FAILED %s saying to start with the current toolgate", got.Status, got.Error, got.Cause, review.CodeUnauthenticated)
		}
	})
}

// recordStart sends a start request to review-request's start lane
// instance, as toolgate run does.
func recordStart(t *testing.T, e *env, executionARN, digest, proof string) {
	t.Helper()
	payload, _ := json.Marshal(review.StartRequest{Action: review.StartAction, ExecutionARN: executionARN, InputDigest: digest, Proof: proof})
	res, err := http.Post(e.st.StartEndpoint+local.InvokePath, "application/json", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var answer tool.StartResult
	if json.Unmarshal(b, &answer) != nil || answer.Starter != local.LocalPrincipal(starter) {
		t.Fatalf("start request for %s: %s", executionARN, b)
	}
}

// startVerifier is review-request's caller verifier as the local stack
// configures it (the STS stand-in, the local account), recording proofs in
// the stack's table.
func startVerifier(t *testing.T, e *env) *caller.Verifier {
	t.Helper()
	env := map[string]string{caller.EnvSTSEndpoint: e.st.STS.Endpoint(), caller.EnvSTSAllowHTTP: "true", caller.EnvAccount: local.LocalAccountID}
	cfg, err := caller.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	v, err := caller.NewVerifier(cfg, ledger.ProofTable{DB: local.DynamoDB(e.st.Dynamo.Endpoint()), Table: stack.Table})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
