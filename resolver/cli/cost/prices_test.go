package cost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBuiltinPricesAreDatedAndSourced(t *testing.T) {
	p := BuiltinPrices()
	if p.Region != "us-east-1" || p.Source() != BuiltinSource || len(p.Sources) < 4 {
		t.Errorf("built-in prices: %+v", p)
	}
	if _, err := time.Parse(time.DateOnly, p.AsOf); err != nil {
		t.Errorf("as_of: %v", err)
	}
	for _, page := range []string{"lambda", "dynamodb", "ses", "step-functions"} {
		found := false
		for _, s := range p.Sources {
			found = found || strings.Contains(s, "aws.amazon.com/"+page+"/pricing")
		}
		if !found {
			t.Errorf("no source for %s pricing in %v", page, p.Sources)
		}
	}
}

func TestLoadPricesOverrides(t *testing.T) {
	p, err := LoadPrices("testdata/prices-eu-west-1.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.Region != "eu-west-1" || p.AsOf != "2026-11-30" || p.Source() != "testdata/prices-eu-west-1.json" || p.WritesPerMillionUnits != 1e7 {
		t.Errorf("loaded %+v", p)
	}
	r := Estimate(execution, []Call{fetch()}, Transitions{}, p)
	if r.Prices.Region != "eu-west-1" || r.Prices.Source != "testdata/prices-eu-west-1.json" || r.Total.USD.DynamoDBWrites != 20 { // 2 write units at $10 a unit
		t.Errorf("the estimate did not use the file's prices: %+v", r.Prices)
	}
}

// A bad price table is refused with the file and the field at fault.
func TestLoadPricesRefuses(t *testing.T) {
	good, err := os.ReadFile("prices.json")
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("prices.json has no %q", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"a misspelt price is an unknown field", replace(`"lambda_usd_per_million_requests"`, `"lambda_usd_per_million_request"`), `unknown field "lambda_usd_per_million_request"`},
		{"a missing price", without(t, good, "ses_usd_per_thousand_messages"), `field "ses_usd_per_thousand_messages": missing`},
		{"a negative price", replace(`0.625`, `-0.625`), `field "dynamodb_usd_per_million_write_request_units": -0.625 is not a price`},
		{"a price as a string", replace(`0.125`, `"0.125"`), `field "dynamodb_usd_per_million_read_request_units": want a number, got a JSON string`},
		{"an undated table", without(t, good, "as_of"), `field "as_of": missing`},
		{"a date that is not one", replace(`"2025-01-31"`, `"January 2025"`), `field "as_of": "January 2025" is not a date`},
		{"a table without sources", without(t, good, "sources"), `field "sources": missing`},
		{"a source that is not a URL", replace(`"https://aws.amazon.com/ses/pricing/"`, `"the SES page"`), `field "sources[2]": "the SES page" is not an absolute URL`},
		{"another currency", replace(`"USD"`, `"EUR"`), `field "currency": "EUR": only USD is supported`},
		{"not JSON", replace(`{`, `{{`), `not JSON at byte`},
		{"two objects", string(good) + "{}", `more than one JSON value`},
		{"an empty file", "", `empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "prices.json")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadPrices(path)
			if err == nil || !strings.Contains(err.Error(), "price table "+path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadPrices: %v\nwant an error naming %s and containing %s", err, path, tc.want)
			}
		})
	}
	if _, err := LoadPrices(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("a missing file: %v", err)
	}
}

// without returns the JSON object doc without its field.
func without(t *testing.T, doc []byte, field string) string {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m[field]; !ok {
		t.Fatalf("no field %q to leave out", field)
	}
	delete(m, field)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
