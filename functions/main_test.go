package functions_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/toolgate/toolgate/infra/local/localtest"
)

// TestMain stops the dynalite the package's tests share
// (localtest.SharedTable: a table of each test's own).
func TestMain(m *testing.M) {
	code := m.Run()
	if err := localtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the shared dynalite:", err)
	}
	os.Exit(code)
}
