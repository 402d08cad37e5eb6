package cli

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/workflow-validator/validator"
)

// A 40 KB Solution (block sequences nested on one line, "- - - … x") is far
// under workflow-validator's 1 MiB input bound, yet the YAML parser's cost
// is quadratic in the nesting: ~600 MB allocated and ~2 s here; 60 KB takes
// ~1.4 GB (over the function's 512 MB), 200 KB ~100 s and ~15 GB. The
// resolver bounds flow nesting (flowTooDeep) but not block nesting, so the
// depth limit of 32 is only reported after the parse. The tool should
// answer valid:false quickly, in bounded memory, as it does for flow
// nesting.
func TestValidatorBoundsDeepBlockNesting(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("- ", 20000) + "x\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, err := validator.Validate(validator.Input{Solution: src})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil || out.Valid {
		t.Fatalf("Validate = %+v, %v; want valid:false", out, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("checking a %d-byte Solution allocated %d MiB in %s; want well under 64 MiB (the function has 512 MB for inputs up to 1 MiB)", len(src), alloc>>20, took)
	}
}
