package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/gowebpki/jcs"
)

func digestOf(t testing.TB, input string) string {
	c, err := jcs.Transform([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:])
}
