package localtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
)

// shared is the dynalite a test binary's tests share (SharedDynalite).
var shared struct {
	mu       sync.Mutex
	dynalite *local.Process
	tables   atomic.Int64
}

// SharedDynalite returns the test binary's one dynalite, started by the
// first test that asks and kept until StopShared, which the package's
// TestMain calls after m.Run. Tests on it keep apart by table, each
// creating its own (TableName), so none sees another's items. A start
// that fails fails t, and the next test asking tries again.
func SharedDynalite(t testing.TB) *local.Process {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dynalite == nil {
		// Not t.Context(): the process outlives the test that started it.
		p, err := local.StartDynalite(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		shared.dynalite = p
	}
	p := shared.dynalite
	t.Cleanup(func() {
		if t.Failed() {
			if s := p.Stderr(); s != "" {
				t.Logf("%s (pid %d, shared) stderr:\n%s", p.Name, p.PID, lastLines(s, 40))
			}
		}
	})
	return p
}

// TableName is prefix-N, N a number no other call in the test binary
// returns: a table name of a test's own on SharedDynalite (a DynamoDB
// table name is 3 to 255 of [a-zA-Z0-9_.-]).
func TableName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, shared.tables.Add(1))
}

// SharedTable creates a ledger table of t's own (every index of
// shared/table, tabledef.CreateTable) on SharedDynalite, named
// TableName(prefix), and returns the dynalite, a client of it and the
// table's name once the table is ACTIVE.
func SharedTable(t testing.TB, prefix string) (*local.Process, *dynamodb.Client, string) {
	t.Helper()
	p := SharedDynalite(t)
	db := local.DynamoDB(p.Endpoint())
	name := TableName(prefix)
	if err := tabledef.CreateTable(t.Context(), db, name); err != nil {
		t.Fatal(err)
	}
	WaitActive(t, db, name)
	return p, db, name
}

// WaitActive waits until table on db is ACTIVE, or fails t after 10 s: a
// table just created on a busy SharedDynalite may answer
// ResourceNotFoundException for a moment (dynalite marks it ACTIVE on its
// event loop's next turn), where a fresh, idle dynalite never showed it.
func WaitActive(t testing.TB, db *dynamodb.Client, table string) {
	t.Helper()
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	})
	if err := w.Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 10*time.Second); err != nil {
		t.Fatalf("table %s: %v", table, err)
	}
}

// RunShared is a TestMain's body for a package whose tests share
// SharedDynalite: it runs m's tests, stops the shared dynalite (saying so
// on stderr if it cannot) and returns m.Run's exit code, for os.Exit.
func RunShared(m *testing.M) int {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the shared dynalite:", err)
	}
	return code
}

// StopShared stops SharedDynalite's process, if one was started
// (RunShared calls it once m.Run has returned).
func StopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dynalite == nil {
		return nil
	}
	err := shared.dynalite.Stop()
	shared.dynalite = nil
	return err
}
