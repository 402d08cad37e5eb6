package httptool

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/tool"
)

var uuidV8 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// FuzzKeyHeaderValue: every value written is a valid header value; raw is
// the key, sf-string reads back to the key (RFC 8941 §4.2.5), uuid is a
// version 8 UUID and the same for the same key.
func FuzzKeyHeaderValue(f *testing.F) {
	for _, k := range []string{"AbCdEfGhIjKlMnOpQrStUv/1", `a"b\c`, "a b", "", "é", "\x7f", "~"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		for _, format := range httprule.Formats {
			v, err := KeyHeaderValue(format, key)
			if err != nil {
				continue
			}
			if err := httprule.CheckHeaderValue(v); err != nil {
				t.Fatalf("%s of %q = %q, which %v", format, key, v, err)
			}
			switch format {
			case httprule.FormatRaw:
				if v != key {
					t.Fatalf("raw %q = %q", key, v)
				}
			case httprule.FormatSFString:
				back, err := readSFString(v)
				if err != nil || back != key {
					t.Fatalf("sf-string %q = %q, reads back %q, %v", key, v, back, err)
				}
			case httprule.FormatUUID:
				again, _ := KeyHeaderValue(format, key)
				if !uuidV8.MatchString(v) || again != v {
					t.Fatalf("uuid of %q = %q (again %q)", key, v, again)
				}
			}
		}
	})
}

// readSFString parses an RFC 8941 §4.2.5 sf-string, independently of
// KeyHeaderValue.
func readSFString(v string) (string, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", strconv.ErrSyntax
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v)-1 || v[i] != '"' && v[i] != '\\' {
				return "", strconv.ErrSyntax
			}
			b.WriteByte(v[i])
		case c == '"' || c < 0x20 || c > 0x7e:
			return "", strconv.ErrSyntax
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// FuzzEncodeBody: a body is sent only with POST, PUT and PATCH, never over
// the bound; a JSON media type (or none) sends the JSON text as given,
// another sends a JSON string's bytes; a refusal is TOOL_INPUT_INVALID
// and never quotes the body.
func FuzzEncodeBody(f *testing.F) {
	for _, s := range [][3]string{
		{"POST", `{"a":1}`, ""}, {"PUT", `"héllo"`, "text/plain; charset=utf-8"}, {"PATCH", `{}`, "application/merge-patch+json"},
		{"GET", `{}`, ""}, {"POST", `[1]`, "text/csv"}, {"POST", `"x"`, "json"}, {"POST", `"x"`, "a/b; c"}, {"DELETE", `null`, ""},
		{"POST", `"x"`, "application/+json"}, {"POST", `1`, "APPLICATION/JSON"},
	} {
		f.Add(s[0], s[1], s[2], uint16(64))
	}
	f.Fuzz(func(t *testing.T, method, body, contentType string, limit uint16) {
		if !json.Valid([]byte(body)) {
			return
		}
		out, ct, err := encodeBody(method, json.RawMessage(body), contentType, int(limit))
		if err != nil {
			var te *tool.Error
			if e, ok := err.(*tool.Error); !ok || e.Code != tool.InputInvalid {
				t.Fatalf("error %v is not TOOL_INPUT_INVALID", err)
			} else {
				te = e
			}
			if len(body) > 8 && strings.Contains(te.Message, body) {
				t.Fatalf("message %q quotes the body", te.Message)
			}
			return
		}
		if out == nil {
			if body != "null" {
				t.Fatalf("body %q sent nothing", body)
			}
			return
		}
		if !httprule.TakesBody(method) || len(out) > int(limit) {
			t.Fatalf("%s sent %d bytes (bound %d)", method, len(out), limit)
		}
		mt, _ := mediaType(contentType)
		switch {
		case contentType == "" || isJSON(mt):
			if string(out) != body || ct == "" && contentType == "" {
				t.Fatalf("JSON body %q sent as %q with %q", body, out, ct)
			}
		default:
			var s string
			if json.Unmarshal([]byte(body), &s) != nil || string(out) != s || !utf8.Valid(out) && utf8.ValidString(s) {
				t.Fatalf("text body %q sent as %q", body, out)
			}
		}
	})
}
