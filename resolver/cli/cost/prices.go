package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"reflect"
	"time"
)

// builtinPrices is the dated price table in the repository, prices.json.
//
//go:embed prices.json
var builtinPrices []byte

// BuiltinSource names the built-in price table in an estimate.
const BuiltinSource = "built-in resolver/cli/cost/prices.json"

// Prices is one region's list prices in US dollars, each in the unit its
// AWS pricing page quotes it in, so that a figure can be checked against
// the page it came from. Every price is required and may not be negative.
type Prices struct {
	Region  string   `json:"region"`
	AsOf    string   `json:"as_of"` // YYYY-MM-DD: the day the prices were taken from Sources
	Sources []string `json:"sources"`
	Note    string   `json:"note,omitempty"`

	LambdaPerGBSecond        float64 `json:"lambda_arm64_usd_per_gb_second"`
	LambdaPerMillionRequests float64 `json:"lambda_usd_per_million_requests"`
	WritesPerMillionUnits    float64 `json:"dynamodb_usd_per_million_write_request_units"`
	ReadsPerMillionUnits     float64 `json:"dynamodb_usd_per_million_read_request_units"`
	SESPerThousandMessages   float64 `json:"ses_usd_per_thousand_messages"`
	TransitionsPerThousand   float64 `json:"sfn_standard_usd_per_thousand_state_transitions"`

	source string
}

// Source is where the prices were read from: BuiltinSource or a file.
func (p *Prices) Source() string { return p.source }

// BuiltinPrices returns the price table embedded from prices.json.
func BuiltinPrices() *Prices {
	p, err := ParsePrices(builtinPrices)
	if err != nil {
		panic("cost: the built-in prices.json: " + err.Error())
	}
	p.source = BuiltinSource
	return p
}

// LoadPrices reads a price table file in the format of prices.json. Its
// errors name the file and, where one is at fault, the field.
func LoadPrices(path string) (*Prices, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	p, err := ParsePrices(data)
	if err != nil {
		return nil, fmt.Errorf("price table %s: %w", path, err)
	}
	p.source = path
	return p, nil
}

// ParsePrices decodes and checks a price table: one JSON object with
// exactly the fields of prices.json (an unknown field, such as a
// misspelt price, is an error), every price present, finite and not
// negative, as_of a date, sources absolute URLs and the currency USD.
func ParsePrices(data []byte) (*Prices, error) {
	var raw struct {
		Region   *string  `json:"region"`
		AsOf     *string  `json:"as_of"`
		Currency *string  `json:"currency"`
		Sources  []string `json:"sources"`
		Note     string   `json:"note"`

		Lambda      *float64 `json:"lambda_arm64_usd_per_gb_second"`
		Requests    *float64 `json:"lambda_usd_per_million_requests"`
		Writes      *float64 `json:"dynamodb_usd_per_million_write_request_units"`
		Reads       *float64 `json:"dynamodb_usd_per_million_read_request_units"`
		SES         *float64 `json:"ses_usd_per_thousand_messages"`
		Transitions *float64 `json:"sfn_standard_usd_per_thousand_state_transitions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	switch {
	case raw.Region == nil || *raw.Region == "":
		return nil, fieldError("region", "missing")
	case raw.AsOf == nil:
		return nil, fieldError("as_of", "missing")
	case raw.Currency == nil:
		return nil, fieldError("currency", "missing")
	case *raw.Currency != "USD":
		return nil, fieldError("currency", fmt.Sprintf("%q: only USD is supported", *raw.Currency))
	case len(raw.Sources) == 0:
		return nil, fieldError("sources", "missing: name the pricing pages the prices come from")
	}
	if _, err := time.Parse(time.DateOnly, *raw.AsOf); err != nil {
		return nil, fieldError("as_of", fmt.Sprintf("%q is not a date (YYYY-MM-DD)", *raw.AsOf))
	}
	for i, s := range raw.Sources {
		if u, err := url.Parse(s); err != nil || !u.IsAbs() || u.Host == "" {
			return nil, fieldError(fmt.Sprintf("sources[%d]", i), fmt.Sprintf("%q is not an absolute URL", s))
		}
	}
	p := &Prices{Region: *raw.Region, AsOf: *raw.AsOf, Sources: raw.Sources, Note: raw.Note}
	for _, f := range []struct {
		name string
		v    *float64
		dst  *float64
	}{
		{"lambda_arm64_usd_per_gb_second", raw.Lambda, &p.LambdaPerGBSecond},
		{"lambda_usd_per_million_requests", raw.Requests, &p.LambdaPerMillionRequests},
		{"dynamodb_usd_per_million_write_request_units", raw.Writes, &p.WritesPerMillionUnits},
		{"dynamodb_usd_per_million_read_request_units", raw.Reads, &p.ReadsPerMillionUnits},
		{"ses_usd_per_thousand_messages", raw.SES, &p.SESPerThousandMessages},
		{"sfn_standard_usd_per_thousand_state_transitions", raw.Transitions, &p.TransitionsPerThousand},
	} {
		switch {
		case f.v == nil:
			return nil, fieldError(f.name, "missing")
		case *f.v < 0 || math.IsInf(*f.v, 0) || math.IsNaN(*f.v):
			return nil, fieldError(f.name, fmt.Sprintf("%v is not a price (want a number of dollars, 0 or more)", *f.v))
		}
		*f.dst = *f.v
	}
	return p, nil
}

func fieldError(field, problem string) error {
	return fmt.Errorf("field %q: %s", field, problem)
}

// decodeError names the field of a JSON type or unknown-field error.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		want := map[reflect.Kind]string{reflect.Float64: "number", reflect.String: "string", reflect.Slice: "list of strings"}[typeErr.Type.Kind()]
		return fieldError(typeErr.Field, fmt.Sprintf("want a %s, got a JSON %s", want, typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("not JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case errors.Is(err, io.EOF):
		return errors.New("empty: want a JSON object")
	}
	// encoding/json: `json: unknown field "x"` names the field already.
	return fmt.Errorf("%v (the fields are those of %s)", err, BuiltinSource)
}
