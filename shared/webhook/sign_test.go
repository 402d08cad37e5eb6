package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

type vector struct {
	Name          string   `json:"name"`
	SignWith      []string `json:"sign_with"`
	ID            string   `json:"id"`
	Timestamp     int64    `json:"timestamp"`
	Payload       string   `json:"payload"`
	Signature     string   `json:"signature"`
	VerifyWith    string   `json:"verify_with"`
	VerifyPayload *string  `json:"verify_payload"`
	VerifyID      *string  `json:"verify_id"`
	Now           int64    `json:"now"`
	Want          string   `json:"want"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	b, err := os.ReadFile("../../testdata/webhooks/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Source string   `json:"source"`
		Cases  []vector `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Source == "" || len(doc.Cases) == 0 {
		t.Fatal("vectors.json has no source or no cases")
	}
	return doc.Cases
}

var wantErr = map[string]error{
	"ok": nil, "no_matching_signature": ErrNoMatchingSig, "too_old": ErrTooOld, "too_new": ErrTooNew,
}

// TestVectorsSignAndVerify runs every vector of testdata/webhooks through
// Sign (the exact header value) and Verify (with the receiver's clock).
func TestVectorsSignAndVerify(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			var keys [][]byte
			for _, s := range v.SignWith {
				k, err := ParseSecret(s)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			got, err := Sign(keys, v.ID, time.Unix(v.Timestamp, 0), []byte(v.Payload))
			if err != nil {
				t.Fatal(err)
			}
			if got != v.Signature {
				t.Fatalf("Sign = %q, want %q", got, v.Signature)
			}
			key, err := ParseSecret(v.VerifyWith)
			if err != nil {
				t.Fatal(err)
			}
			body, id := v.Payload, v.ID
			if v.VerifyPayload != nil {
				body = *v.VerifyPayload
			}
			if v.VerifyID != nil {
				id = *v.VerifyID
			}
			want, ok := wantErr[v.Want]
			if !ok {
				t.Fatalf("unknown want %q", v.Want)
			}
			err = Verify(key, id, strconv.FormatInt(v.Timestamp, 10), v.Signature, []byte(body), time.Unix(v.Now, 0), Tolerance)
			if !errors.Is(err, want) || (want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, want)
			}
		})
	}
}

// TestNewSecretParsesBack checks that a new secret is 32 bytes, padded
// standard base64 after "whsec_", and that ParseSecret returns its key.
func TestNewSecretParsesBack(t *testing.T) {
	whsec, key, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 32 || !strings.HasPrefix(whsec, "whsec_") || len(whsec) != len("whsec_")+44 {
		t.Fatalf("NewSecret = %d bytes, %d characters", len(key), len(whsec))
	}
	got, err := ParseSecret(whsec)
	if err != nil || string(got) != string(key) {
		t.Fatalf("ParseSecret(NewSecret()) = %x, %v", got, err)
	}
	other, _, _ := NewSecret()
	if other == whsec {
		t.Fatal("two new secrets are equal")
	}
}

// TestParseSecretRefusals checks each refusal and that no error quotes
// the secret.
func TestParseSecretRefusals(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	for _, c := range []struct{ name, secret, want string }{
		{"no prefix", b64(32), `"whsec_"`},
		{"not base64", "whsec_" + strings.Repeat("!", 44), "base64"},
		{"url-safe alphabet", "whsec_" + strings.Repeat("-_", 22), "base64"},
		{"too short", "whsec_" + b64(23), "23 bytes"},
		{"too long", "whsec_" + b64(65), "65 bytes"},
		{"empty", "whsec_", "0 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSecret(c.secret)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ParseSecret = %v, want an error saying %s", err, c.want)
			}
			if rest := strings.TrimPrefix(c.secret, "whsec_"); len(rest) > 4 && strings.Contains(err.Error(), rest) {
				t.Fatalf("error quotes the secret: %v", err)
			}
		})
	}
	for _, n := range []int{24, 64} {
		if _, err := ParseSecret("whsec_" + b64(n)); err != nil {
			t.Errorf("ParseSecret of %d bytes: %v", n, err)
		}
	}
}

// TestSignRefusesWithoutKeyOrID checks Sign's refusals.
func TestSignRefusesWithoutKeyOrID(t *testing.T) {
	if _, err := Sign(nil, "evt_x", time.Unix(1, 0), nil); err == nil {
		t.Error("Sign with no key succeeded")
	}
	if _, err := Sign([][]byte{{}}, "evt_x", time.Unix(1, 0), nil); err == nil {
		t.Error("Sign with an empty key succeeded")
	}
	if _, err := Sign([][]byte{make([]byte, 32)}, "", time.Unix(1, 0), nil); err == nil {
		t.Error("Sign with an empty id succeeded")
	}
}

// TestVerifyRefusesMissingAndBadHeaders checks Verify before any signature.
func TestVerifyRefusesMissingAndBadHeaders(t *testing.T) {
	key := make([]byte, 32)
	now := time.Unix(1_700_000_000, 0)
	sig, _ := Sign([][]byte{key}, "evt_a", now, []byte("{}"))
	for _, c := range []struct {
		name, id, ts, sig string
		want              error
	}{
		{"no id", "", "1700000000", sig, ErrMissingHeader},
		{"no timestamp", "evt_a", "", sig, ErrMissingHeader},
		{"no signature", "evt_a", "1700000000", "", ErrMissingHeader},
		{"timestamp not seconds", "evt_a", "1700000000.5", sig, ErrBadTimestamp},
		{"another version only", "evt_a", "1700000000", "v2," + strings.TrimPrefix(sig, "v1,"), ErrNoMatchingSig},
	} {
		if err := Verify(key, c.id, c.ts, c.sig, []byte("{}"), now, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
	if err := Verify(key, "evt_a", "1700000000", sig, []byte("{}"), now, 0); err != nil {
		t.Errorf("Verify of a good delivery = %v", err)
	}
}
