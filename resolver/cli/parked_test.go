package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// A parked command line the CLI cannot run is refused with exit 2 and a
// message naming what is wrong, before anything is signed or sent.
func TestParkedMisuseNamesTheBadArgument(t *testing.T) {
	t.Parallel()
	const id = "pk_abcdefghijklmnopqrstuvwxyz"
	local := []string{"--endpoint", "http://127.0.0.1:1", "--as", "alice"}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"no subcommand", []string{"parked"}, "name a command"},
		{"unknown subcommand", []string{"parked", "delete", id}, `unknown command "delete"`},
		{"no transport", []string{"parked", "list"}, "pass --url"},
		{"--as with --url", []string{"parked", "list", "--url", "https://x.lambda-url.us-east-1.on.aws/", "--as", "a"}, "--as is for the local stack"},
		{"--endpoint without --as", []string{"parked", "list", "--endpoint", "http://127.0.0.1:1"}, "--endpoint needs --as"},
		{"reject without reason", append([]string{"parked", "reject", id}, local...), "needs --reason"},
		{"show without id", append([]string{"parked", "show"}, local...), "name one park id"},
		{"a review id for a park id", append([]string{"parked", "approve", "rv_0123456789abcdef0123456789abcdef"}, local...), `"rv_0123456789abcdef0123456789abcdef" is not a park id`},
		{"list with an argument", append([]string{"parked", "list", id}, local...), "list takes no arguments"},
		{"a reason for approve", append([]string{"parked", "approve", id, "--reason", "x"}, local...), "unknown flag: --reason"},
	} {
		code, _, errs := run(c.args...)
		if code != ExitMisuse || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", c.name, code, errs, ExitMisuse, c.says)
		}
	}
}

// parkedItem writes a park item as review-request records one (ungated,
// tool.schema_changed), with the run's start record by starter, and
// returns the park id and its task token.
func (e *reviewEnv) parkedItem(t *testing.T, starter string) (string, string) {
	t.Helper()
	ctx := context.Background()
	run := "arn:aws:states:us-east-1:123456789012:execution:sm:" + review.NewID()
	rowSK := fmt.Sprintf("CALL#000003#%019d#0a1b2c3d", time.Now().UnixNano())
	id := park.ID("RUN#"+run, rowSK)
	now := time.Now().UTC()
	created := now.Format(park.TimeFormat)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	item := map[string]types.AttributeValue{"pk": s("PARK#" + id), "sk": s("PARK"), "run_id": s(run), "step": s("update"), "seq": s("3"),
		"idempotency_key": s(run + "/3"), "tool": s("crm.update"), "toolset_id": s("ts_f7826302d51ea15dba1ab8b9cf962a58"),
		"cause": s(string(park.SchemaChanged)), "gated": &types.AttributeValueMemberBOOL{Value: false}, "row_sk": s(rowSK),
		"task_token": s("token-" + id), "status": s("PARKED"), "created_at": s(created),
		"deadline":      &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(time.Hour).Unix(), 10)},
		"pinned_digest": s("sha256:" + strings.Repeat("1", 64)), "current_digest": s("sha256:" + strings.Repeat("2", 64)),
		"changed_pointers": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("/inputSchema/properties/\u202Eid")}},
		"park_list_pk":     s("PARKS#PARKED"), "park_list_sk": s(created + "#" + id)}
	if _, err := local.DynamoDB(e.dynamo).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: item}); err != nil {
		t.Fatal(err)
	}
	if err := e.reviews.RecordStart(ctx, run, starter); err != nil {
		t.Fatal(err)
	}
	return id, "token-" + id
}

// toolgate parked shows a park (its changed pointers with invisible
// characters escaped), approves it as the run's starter, sending
// park.Result to its Task, says so again on a repeat, and refuses
// another decision afterwards and a stranger's.
func TestParkedCommandLocal(t *testing.T) {
	t.Parallel()
	e := newReviewEnv(t)
	id, token := e.parkedItem(t, as("bob"))
	args := func(who string, a ...string) []string {
		return append(append([]string{"parked"}, a...), "--endpoint", e.decision.Endpoint(), "--as", who)
	}
	code, out, errs := e.cli.run(args("bob", "list")...)
	if code != ExitOK || !strings.Contains(out, id) || !strings.Contains(out, "crm.update") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := e.cli.run(args("carol", "list")...); code != ExitOK || !strings.Contains(out, "no parked calls") {
		t.Fatalf("a stranger's list: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = e.cli.run(args("bob", "show", id)...)
	if code != ExitOK || !strings.Contains(out, "tool.schema_changed") || !strings.Contains(out, `\u{202E}id`) || strings.Contains(out, token) {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := e.cli.run(args("carol", "approve", id)...); code != ExitErrors || !strings.Contains(errs, "REVIEW_FORBIDDEN") {
		t.Fatalf("a stranger approves: exit %d %s", code, errs)
	}
	code, out, errs = e.cli.run(args("bob", "approve", id)...)
	if code != ExitOK || !strings.Contains(out, "approved by "+as("bob")) {
		t.Fatalf("approve: exit %d\n%s%s", code, out, errs)
	}
	if calls := e.sfn.Calls(token); len(calls) != 1 || calls[0].Action != "SendTaskSuccess" ||
		calls[0].Output != `{"park_id":"`+id+`","decision":"approve","reason":null}` {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	if code, out, _ := e.cli.run(args("bob", "approve", id, "--json")...); code != ExitOK || !strings.Contains(out, `"changed": false`) {
		t.Fatalf("the same approval again: exit %d\n%s", code, out)
	}
	if code, _, errs := e.cli.run(args("bob", "reject", id, "--reason", "no")...); code != ExitErrors || !strings.Contains(errs, "REVIEW_CONFLICT") {
		t.Fatalf("a rejection after the approval: exit %d %s", code, errs)
	}
	if code, _, errs := e.cli.run(args("bob", "resume", id)...); code != ExitErrors || !strings.Contains(errs, "REVIEW_FORBIDDEN") {
		t.Fatalf("resume of a schema change: exit %d %s", code, errs)
	}
}
