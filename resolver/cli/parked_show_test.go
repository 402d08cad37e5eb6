package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/park"
)

// toolgate parked show prints each changed JSON Pointer of a
// tool.schema_changed park after its class: additive when the park lists
// it as such, breaking otherwise (as on a park recorded before changes
// were classified), and one breaking line for a tool its server lists no
// more.
func TestParkedShowPrintsTheClassOfEachChangedPointer(t *testing.T) {
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	for _, tt := range []struct {
		name string
		view park.View
		want []string
	}{
		{"classified", park.View{PinnedDigest: digest("1"), CurrentDigest: digest("2"),
			ChangedPointers:  []string{"/inputSchema/properties/lang", "/inputSchema/required/1"},
			AdditivePointers: []string{"/inputSchema/properties/lang"}},
			[]string{"changed     additive /inputSchema/properties/lang", "            breaking /inputSchema/required/1"}},
		{"recorded before classes", park.View{PinnedDigest: digest("1"), CurrentDigest: digest("2"), ChangedPointers: []string{"/description"}},
			[]string{"changed     breaking /description"}},
		{"tool removed", park.View{PinnedDigest: digest("1")},
			[]string{"changed     breaking: the server lists the tool no more"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.view
			v.ParkID, v.Status, v.Cause = "pk_x", park.StatusParked, park.SchemaChanged
			body, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var out, errs bytes.Buffer
			if code := printPark(body, &out, &errs); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs.String())
			}
			if !strings.Contains(out.String(), strings.Join(tt.want, "\n")+"\n") {
				t.Errorf("show:\n%s\nwant the lines\n%s", out.String(), strings.Join(tt.want, "\n"))
			}
		})
	}
}
