package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/ledger"
)

// EnvTable names the ledger table when --table is not given.
const EnvTable = "TOOLGATE_TABLE"

// awsFlags are the connection flags of commands that talk to AWS.
type awsFlags struct {
	endpoint, table string
}

func (a *awsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.endpoint, "endpoint", "", "DynamoDB endpoint URL (default: the standard AWS configuration, e.g. AWS_ENDPOINT_URL_DYNAMODB)")
	fs.StringVar(&a.table, "table", os.Getenv(EnvTable), "ledger table name (default $"+EnvTable+")")
}

func (a *awsFlags) store(ctx context.Context) (*ledger.Store, error) {
	if a.table == "" {
		return nil, fmt.Errorf("no ledger table: pass --table or set %s", EnvTable)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if a.endpoint != "" {
			o.BaseEndpoint = aws.String(a.endpoint)
		}
	})
	return ledger.New(db, a.table), nil
}

// ledgerCmd is `toolgate ledger RUN_ID`: a run's rows as a table, or JSON.
func ledgerCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("ledger", stderr)
	var af awsFlags
	af.register(fs)
	asJSON := fs.Bool("json", false, "print the rows as a JSON array")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: toolgate ledger [--json] [--endpoint URL] [--table NAME] RUN_ID")
		return ExitMisuse
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := af.store(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate ledger: %v\n", err)
		return ExitMisuse
	}
	rows, err := store.RunRows(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolgate ledger: %v\n", err)
		return ExitErrors
	}
	if rows == nil {
		rows = []ledger.Row{}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rows)
		return ExitOK
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "toolgate ledger: no rows for run %s\n", pos[0])
		return ExitErrors
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tATTEMPT\tSTEP\tTOOL\tSTATUS\tERROR\tRETRYABLE\tSTARTED\tMS\tIN\tOUT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%v\t%s\t%d\t%d\t%d\n", r.Seq, r.Attempt, r.Step, r.Tool, r.Status,
			orDash(r.ErrorCode), r.Retryable, r.StartedAt.UTC().Format(time.RFC3339), r.DurationMS, r.InputBytes, r.OutputBytes)
	}
	tw.Flush()
	return ExitOK
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
