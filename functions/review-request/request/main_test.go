package request_test

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/infra/local/localtest"
)

// TestMain stops the dynalite the package's tests share
// (localtest.SharedTable: a table of each test's own).
func TestMain(m *testing.M) { os.Exit(localtest.RunShared(m)) }
