package inbound_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inbound"
)

// vectorFile is one file of testdata/webhooks/inbound: a scheme's vectors
// and where they come from.
type vectorFile struct {
	Scheme  string   `json:"scheme"`
	Source  string   `json:"source"`
	Vectors []vector `json:"vectors"`
}

type vector struct {
	Name    string              `json:"name"`
	Secrets []string            `json:"secrets"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
	NowUnix int64               `json:"now_unix"`
	Want    *struct {
		ID            string `json:"id"`
		Type          string `json:"type"`
		TimestampUnix int64  `json:"timestamp_unix"`
	} `json:"want"`
	Error string `json:"error"`
}

// errorNames are the vector files' names of Verify's errors.
var errorNames = map[string]error{
	"missing_header":   inbound.ErrMissingHeader,
	"malformed_header": inbound.ErrMalformedHeader,
	"stale_timestamp":  inbound.ErrStaleTimestamp,
	"bad_signature":    inbound.ErrBadSignature,
	"no_event_id":      inbound.ErrNoEventID,
	"body_not_json":    inbound.ErrBodyNotJSON,
}

func header(m map[string][]string) http.Header {
	h := http.Header{}
	for k, vs := range m {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

func TestVectorsVerifyThroughTheRealVerifier(t *testing.T) {
	files, err := filepath.Glob("../../testdata/webhooks/inbound/*.json")
	if err != nil || len(files) != 3 {
		t.Fatalf("vector files: %v %v, want one per scheme", files, err)
	}
	seen := map[inbound.Scheme]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var vf vectorFile
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&vf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		scheme, err := inbound.ParseScheme(vf.Scheme)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		seen[scheme] = true
		if len(vf.Source) < 40 || len(vf.Vectors) == 0 {
			t.Fatalf("%s: every file names its source and holds vectors", f)
		}
		oks := 0
		for _, v := range vf.Vectors {
			t.Run(string(scheme)+"/"+v.Name, func(t *testing.T) {
				ev, err := inbound.Verify(scheme, v.Secrets, header(v.Headers), []byte(v.Body), time.Unix(v.NowUnix, 0))
				if v.Want != nil {
					oks++
					if err != nil {
						t.Fatalf("Verify: %v", err)
					}
					var ts time.Time
					if v.Want.TimestampUnix != 0 {
						ts = time.Unix(v.Want.TimestampUnix, 0).UTC()
					}
					want := inbound.Event{ID: v.Want.ID, Type: v.Want.Type, Timestamp: ts}
					if ev != want {
						t.Fatalf("event %+v, want %+v", ev, want)
					}
					return
				}
				wantErr, ok := errorNames[v.Error]
				if !ok {
					t.Fatalf("vector names no known error: %q", v.Error)
				}
				if !errors.Is(err, wantErr) {
					t.Fatalf("Verify: %v, want %v", err, wantErr)
				}
				for _, s := range v.Secrets {
					if strings.Contains(err.Error(), s) {
						t.Fatalf("error quotes a secret: %v", err)
					}
				}
			})
		}
		if oks == 0 {
			t.Fatalf("%s: no vector verifies", f)
		}
	}
	for _, s := range inbound.Schemes {
		if !seen[s] {
			t.Errorf("no vectors for %s", s)
		}
	}
}
