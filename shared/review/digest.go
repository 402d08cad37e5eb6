package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"

	"github.com/gowebpki/jcs"
)

// Digest returns the RFC 8785 (JSON Canonicalization Scheme) form of input
// and its digest, "sha256:" and the hex SHA-256 of that form: the same
// input_digest the dispatcher computes and records on every ledger row, so
// an approval's digest can be compared with the call's.
//
// Like the dispatcher, it refuses a number that canonicalisation would
// change (RFC 8785 writes every number as an IEEE 754 double): two inputs
// differing only there would share a digest, and a reviewer would approve
// another value than the one sent.
func Digest(input json.RawMessage) (canonical []byte, digest string, err error) {
	if err := exactNumbers(input); err != nil {
		return nil, "", err
	}
	canonical, err = jcs.Transform(input)
	if err != nil {
		return nil, "", fmt.Errorf("input is not valid JSON: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return canonical, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// exactNumbers refuses numbers that RFC 8785 canonicalisation would change;
// the rule and its wording are the dispatcher's (shared/dispatch).
func exactNumbers(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("input is not valid JSON: %w", err)
		}
		n, ok := t.(json.Number)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		want, ok := new(big.Rat).SetString(n.String())
		if err != nil || !ok {
			return fmt.Errorf("the input number ending at byte %d is out of range: send it as a string", dec.InputOffset())
		}
		got, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		if got.Cmp(want) != 0 {
			return fmt.Errorf("the input number ending at byte %d cannot be represented exactly as an IEEE 754 double (RFC 8785): send it as a string", dec.InputOffset())
		}
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
