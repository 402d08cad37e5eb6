package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/secrets"
	"github.com/toolgate/toolgate/shared/tool"
)

// sinceAbsentWarning is what serve logs once when the since time is not
// written yet.
const sinceAbsentWarning = "ledger since time not written yet"

// The upgrade under way, through a real bootstrap under the RIE: the
// function's new code cold starts before the deploy has written the
// stage's since time (it does so once every tool function runs its new
// code). The function starts, logs one warning, and takes its own load
// time as since: a record the previous code wrote unsealed replays for a
// run started before that (a run in flight across the upgrade), and is
// refused, record-forged, for a run started after it.
func TestRIEAColdStartBeforeSinceTakesItsOwnLoadTime(t *testing.T) {
	e, dynamo := newEnvOn(t)
	params, err := local.StartSSM(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { params.Close() })
	n := functionconfig.SecretNamesFor("test", "test-echo")
	client := ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(params.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := secrets.Ensure(context.Background(), client, secrets.Provision{Secrets: []string{n.MAC, n.ExternalKey}}); err != nil {
		t.Fatal(err)
	}
	input := `{"text":"hi"}`
	inFlight := envelopeFor("test-echo", e.ts.ID, "", 1, input)
	preWrite(t, e, e.store, inFlight, input) // e.store has no key: the previous layout
	inFlight = withRunStart(inFlight, time.Now().Add(-time.Minute))

	fn := startRIETool(t, e, dynamo, "test-echo", map[string]string{"AWS_ENDPOINT_URL_SSM": params.Endpoint(),
		functionconfig.EnvMACParam: n.MAC, functionconfig.EnvExternalKeyParam: n.ExternalKey, functionconfig.EnvSinceParam: n.Since})
	if out, code := fn.invoke(t, inFlight); code != "" || string(out) != `{"text":"made up"}` {
		t.Fatalf("a run started before the cold start: %s %s, want its record replayed", out, code)
	}
	later := envelopeFor("test-echo", e.ts.ID, "", 1, input)
	preWrite(t, e, e.store, later, input)
	later = withRunStart(later, time.Now().Add(time.Second))
	if out, code := fn.invoke(t, later); code != string(tool.Internal) {
		t.Fatalf("a run started after the cold start: %s %s, want TOOL_INTERNAL", out, code)
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, later))
	if last := rows[len(rows)-1]; last.Status != ledger.StatusRefused || last.Reason != seal.ReasonRecordForged {
		t.Fatalf("rows %+v, want the refusal with record-forged", rows)
	}
	if fn.effectCount(t) != 0 {
		t.Fatalf("the tool ran %d times", fn.effectCount(t))
	}
	if got := strings.Count(fn.fn.Stdout(), sinceAbsentWarning); got != 1 {
		t.Fatalf("the warning was logged %d times, want once:\n%s", got, fn.fn.Stdout())
	}
	if !strings.Contains(fn.fn.Stdout(), `"level":"WARN"`) || !strings.Contains(fn.fn.Stdout(), n.Since) {
		t.Fatalf("the warning is not a WARN line naming %s:\n%s", n.Since, fn.fn.Stdout())
	}
}
