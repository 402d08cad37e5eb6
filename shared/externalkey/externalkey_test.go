package externalkey

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

var secret = bytes.Repeat([]byte{7}, MinSecretBytes)

// big is a 19-digit seq component.
const big = "1000000000000000000"

const arn = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-prod_invoice:run-2026"

func TestNewIsOpaqueAndStable(t *testing.T) {
	k, err := New(secret, arn, "3")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := New(secret, arn, "3")
	if k != again {
		t.Fatalf("two keys for one call: %s, %s", k, again)
	}
	run, seq, ok := strings.Cut(k, "/")
	if !ok || len(run) != RunIDLength || seq != "3" {
		t.Fatalf("key %q is not <22 characters>/3", k)
	}
	for _, leak := range []string{"123456789012", "eu-west-1", "toolgate", "prod", "invoice", "run-2026", "arn:"} {
		if strings.Contains(k, leak) {
			t.Fatalf("key %q holds %q", k, leak)
		}
	}
	other, _ := New(bytes.Repeat([]byte{8}, MinSecretBytes), arn, "3")
	if other == k {
		t.Fatal("another secret gave the same key")
	}
	next, _ := New(secret, arn+"x", "3")
	if next[:RunIDLength] == k[:RunIDLength] {
		t.Fatal("another run gave the same opaque run id")
	}
	if r, s, err := Parse(k); err != nil || r != RunID(secret, arn) || s != "3" {
		t.Fatalf("Parse(%q) = %q %q %v", k, r, s, err)
	}
}

func TestNewRefuses(t *testing.T) {
	long := tool.Seq("1.0." + strings.Repeat("9", 18) + ".0.1") // 28 characters: fits
	if _, err := New(secret, arn, long); err != nil {
		t.Fatalf("a %d-character seq: %v", len(long), err)
	}
	for _, tc := range []struct {
		name   string
		secret []byte
		seq    tool.Seq
		want   string
	}{
		{"short secret", secret[:MinSecretBytes-1], "1", "at least 32 bytes"},
		{"no secret", nil, "1", "at least 32 bytes"},
		{"invalid seq", secret, "01", "leading zeros"},
		{"seq over the bound", secret, tool.Seq(big + "." + big + ".12"), "over the 41"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := New(tc.secret, arn, tc.seq)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %q, %v; want an error with %q", k, err, tc.want)
			}
		})
	}
}

func TestEveryKeyFitsItsBound(t *testing.T) {
	seq := tool.Seq(big + "." + big + ".1") // 41 characters
	k, err := New(secret, arn, seq)
	if err != nil || len(k) != MaxLength {
		t.Fatalf("New = %q (%d), %v; want %d characters", k, len(k), err, MaxLength)
	}
	for _, c := range []byte(k) {
		if c < 0x21 || c > 0x7e {
			t.Fatalf("key %q holds %q, not visible ASCII", k, c)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	good := RunID(secret, arn)
	for _, tc := range []struct{ name, key string }{
		{"empty", ""},
		{"no slash", good},
		{"short run id", good[1:] + "/1"},
		{"padding", good[:RunIDLength-1] + "=/1"},
		{"the readable key", arn + "/1"},
		{"bad seq", good + "/1.2"},
		{"too long", good + "/" + strings.Repeat("1", 42)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, s, err := Parse(tc.key); err == nil {
				t.Fatalf("Parse(%q) = %q %q", tc.key, r, s)
			}
		})
	}
}

func TestIsFirstSeq(t *testing.T) {
	for seq, want := range map[tool.Seq]bool{"1": true, "1.0.1": true, "1.0.1.0.1": true, "2": false, "1.1.1": false, "1.0.2": false, "2.0.1": false, "x": false} {
		if got := IsFirstSeq(seq); got != want {
			t.Errorf("IsFirstSeq(%q) = %v", seq, got)
		}
	}
}

// FuzzParse: Parse never panics, accepts only keys within the bound made
// of visible ASCII, and what it accepts is what New would make.
func FuzzParse(f *testing.F) {
	k, _ := New(secret, arn, "4.17.2")
	for _, s := range []string{k, "", "/", arn + "/1", strings.Repeat("A", 22) + "/1.0.1", strings.Repeat("-", 22) + "/01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		run, seq, err := Parse(key)
		if err != nil {
			return
		}
		if len(key) > MaxLength || run+"/"+string(seq) != key || len(run) != RunIDLength || seq.Valid() != nil {
			t.Fatalf("Parse(%q) accepted %q %q", key, run, seq)
		}
		for _, c := range []byte(key) {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("Parse(%q) accepted a character that is not visible ASCII", key)
			}
		}
	})
}
