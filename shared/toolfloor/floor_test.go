package toolfloor

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// A function tagged only for its stage has the strictest floor, and a tag
// with a value that is neither of its two is an error with that floor.
func TestFloorFromTagsDefaultsToTheStrictest(t *testing.T) {
	f, err := FromTags(map[string]string{"toolgate:tool": "prod"})
	if err != nil || f != (Floor{}) {
		t.Fatalf("no floor tags: %+v, %v", f, err)
	}
	all := Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true, TolerateDuplicates: true}
	if f, err := FromTags(all.Tags()); err != nil || f != all {
		t.Fatalf("the relaxed tags read back as %+v, %v", f, err)
	}
	f, err = FromTags(map[string]string{TagReview: "optional", TagIdempotent: "yes"})
	if err == nil || f != (Floor{}) || !strings.Contains(err.Error(), TagIdempotent) {
		t.Fatalf("a bad value: %+v, %v", f, err)
	}
}

// A pinned contract looser than the floor is TOOL_PERMISSION_DENIED naming
// the tag; one as strict or stricter is admitted.
func TestFloorAdmitsOnlyWhatTheOwnersAllow(t *testing.T) {
	strict := toolset.Tool{ReviewRequired: true, Policy: catalog.AtMostOnce}
	for _, c := range []struct {
		pin   func(*toolset.Tool)
		floor Floor
		tag   string
	}{
		{func(p *toolset.Tool) { p.ReviewRequired = false }, Floor{}, TagReview},
		{func(p *toolset.Tool) { p.Policy = catalog.AtLeastOnce; p.Idempotent = true }, Floor{Idempotent: true}, TagPolicy},
		{func(p *toolset.Tool) { p.Idempotent = true }, Floor{}, TagIdempotent},
		{func(p *toolset.Tool) { p.TolerateDuplicates = true }, Floor{}, TagDuplicates},
	} {
		p := strict
		c.pin(&p)
		err := c.floor.Admits("create-ticket", p)
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != tool.PermissionDenied || !strings.Contains(te.Message, c.tag) {
			t.Errorf("pinned %+v under %+v: %v, want TOOL_PERMISSION_DENIED naming %s", p, c.floor, err, c.tag)
		}
		if err := (Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true, TolerateDuplicates: true}).Admits("create-ticket", p); err != nil {
			t.Errorf("pinned %+v under the loosest floor: %v", p, err)
		}
	}
	if err := (Floor{}).Admits("create-ticket", strict); err != nil {
		t.Errorf("the strictest pin under the strictest floor: %v", err)
	}
}
