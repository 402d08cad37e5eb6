package store

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/infra/local/localtest"
)

// The package's tests share one dynalite, each on a table of its own.
func TestMain(m *testing.M) { os.Exit(localtest.RunShared(m)) }
