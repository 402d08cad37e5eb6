package receiver

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The caches are bounded in entries: unknown names, which any sender
// chooses, fill only their own map and never evict a known source, and a
// full map drops what ends first. The loader is a stand-in function
// here: the bound is the cache's alone, and the receiver's tests run the
// cache on the real store.
func TestTheSourceCachesAreBoundedInEntries(t *testing.T) {
	now := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	loads := map[string]int{}
	c := newSourceCache(func(_ context.Context, name string, at time.Time) (*source, error) {
		loads[name]++
		if name[0] == 'k' {
			return &source{scheme: "github", until: at.Add(time.Minute)}, nil
		}
		return nil, nil
	})
	get := func(name string) {
		t.Helper()
		if _, _, err := c.get(t.Context(), name, now); err != nil {
			t.Fatal(err)
		}
	}
	get("known")
	for i := range 3 * MaxCachedUnknown {
		get(fmt.Sprintf("u%d", i))
		now = now.Add(time.Millisecond)
	}
	if len(c.unknown) > MaxCachedUnknown || len(c.known) != 1 {
		t.Fatalf("%d unknown and %d known entries, want at most %d and 1", len(c.unknown), len(c.known), MaxCachedUnknown)
	}
	get("known")
	if loads["known"] != 1 {
		t.Fatalf("the known source was loaded %d times: evicted by unknown names", loads["known"])
	}
	for i := range MaxCachedSources + 10 {
		get(fmt.Sprintf("k%d", i))
		now = now.Add(time.Millisecond)
	}
	if len(c.known) > MaxCachedSources {
		t.Fatalf("%d known entries, want at most %d", len(c.known), MaxCachedSources)
	}
	// The first loaded ends first, and was dropped to make room.
	if _, ok := c.known["known"]; ok {
		t.Error("the entry that ends first is still cached")
	}
	// An entry is used until its time, then loaded again.
	get("k600")
	before := loads["k600"]
	now = now.Add(time.Minute)
	get("k600")
	if loads["k600"] != before+1 {
		t.Errorf("an expired entry was not loaded again")
	}
}
