package inputrecord

import (
	"errors"
	"strings"
	"testing"
)

// HasStarter: a definition with the Starter state has it, unless that
// state reads a start proof (ErrStarterOutdated); one without has none; a
// definition that is not JSON is an error.
func TestHasStarter(t *testing.T) {
	for name, c := range map[string]struct {
		def     string
		want    bool
		wantErr error // nil: no error, unless errText is set
		errText string
	}{
		"a Starter state": {def: `{"StartAt":"Init","States":{"Init":{"Type":"Pass","Next":"Starter"},"Starter":{"Type":"Task",` +
			`"Parameters":{"FunctionName":"f","Payload":{"check":"run.start","execution_arn.$":"$$.Execution.Id"}}}}}`, want: true},
		"no Starter state":          {def: `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`},
		"a Starter reading a proof": {def: `{"States":{"Starter":{"Parameters":{"Payload":{"start_proof.$":"$.meta.start_proof"}}}}}`, wantErr: ErrStarterOutdated},
		"a StarterChild only":       {def: `{"States":{"StarterChild":{"Type":"Task"}}}`},
		"not JSON":                  {def: `{"States":`, errText: "not JSON"},
		"States of another shape":   {def: `{"States":[]}`, errText: "not JSON"},
	} {
		got, err := HasStarter([]byte(c.def))
		switch {
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("%s: %v, want %v", name, err, c.wantErr)
		case c.errText != "" && (err == nil || !strings.Contains(err.Error(), c.errText)):
			t.Errorf("%s: %v, want an error saying %q", name, err, c.errText)
		case c.wantErr == nil && c.errText == "" && (err != nil || got != c.want):
			t.Errorf("%s: %v, %v; want %v", name, got, err, c.want)
		}
	}
}

// FuzzHasStarter: HasStarter never panics, and reports a Starter only
// with no error.
func FuzzHasStarter(f *testing.F) {
	f.Add([]byte(`{"States":{"Starter":{"Parameters":{"Payload":{"check":"run.start"}}}}}`))
	f.Add([]byte(`{"States":{"Starter":{"Parameters":{"Payload":{"start_proof.$":"$.meta.start_proof"}}}}}`))
	f.Add([]byte(`{"States":{}}`))
	f.Fuzz(func(t *testing.T, def []byte) {
		has, err := HasStarter(def)
		if has && err != nil {
			t.Fatalf("a Starter with an error: %v", err)
		}
	})
}
