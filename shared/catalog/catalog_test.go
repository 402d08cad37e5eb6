package catalog

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestDefaultCatalog(t *testing.T) {
	c := Default()
	want := map[string]struct {
		idempotent bool
		policy     Policy
		review     bool
		attempts   int
	}{
		"http":                  {false, AtMostOnce, true, 3},
		"send-email":            {false, AtMostOnce, true, 1},
		"structured-data-fetch": {true, AtLeastOnce, false, 3},
		"workflow-validator":    {true, AtLeastOnce, false, 2},
	}
	if got := strings.Join(c.Names(), ","); got != "http,send-email,structured-data-fetch,workflow-validator" {
		t.Fatalf("Names() = %s", got)
	}
	for name, w := range want {
		tool, ok := c.Lookup(name)
		if !ok {
			t.Fatalf("%s missing", name)
		}
		if tool.Idempotent != w.idempotent || tool.Policy != w.policy || tool.ReviewRequired != w.review || tool.Retry.MaxAttempts != w.attempts {
			t.Errorf("%s = %+v, want %+v", name, tool, w)
		}
	}
}

// Every schema in the catalog must compile as JSON Schema 2020-12.
func TestSchemasCompile(t *testing.T) {
	for _, name := range Default().Names() {
		tool, _ := Default().Lookup(name)
		for kind, raw := range map[string][]byte{"input": tool.InputSchema, "output": tool.OutputSchema} {
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
			if err != nil {
				t.Fatalf("%s %s schema: %v", name, kind, err)
			}
			c := jsonschema.NewCompiler()
			if err := c.AddResource("mem:///"+name+"/"+kind, doc); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compile("mem:///" + name + "/" + kind); err != nil {
				t.Errorf("%s %s schema: %v", name, kind, err)
			}
		}
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]string{
		"unknown field":                `{"tools":[{"name":"x","bogus":1}]}`,
		"bad policy":                   `{"tools":[{"name":"x","policy":"sometimes","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":1,"function":"x","input_schema":{},"output_schema":{}}]}`,
		"eleven retries":               `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":11,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":1,"function":"x","input_schema":{},"output_schema":{}}]}`,
		"duplicate":                    `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":1,"function":"x","input_schema":{},"output_schema":{}},{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":1,"function":"x","input_schema":{},"output_schema":{}}]}`,
		"no function timeout":          `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function":"x","input_schema":{},"output_schema":{}}]}`,
		"function timeout 0":           `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":0,"function":"x","input_schema":{},"output_schema":{}}]}`,
		"function timeout over 900":    `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":901,"function":"x","input_schema":{},"output_schema":{}}]}`,
		"a string a Task cannot carry": `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":1,"function":"x","input_schema":{"type":"object","properties":{"s":{"type":"string","maxLength":1048576}}},"output_schema":{}}]}`,
		"the old timeout_seconds":      `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"timeout_seconds":30,"function":"x","input_schema":{},"output_schema":{}}]}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(doc)); err == nil {
				t.Fatal("Parse accepted it")
			}
		})
	}
}

func TestPlaceholder(t *testing.T) {
	for in, want := range map[string]string{"send-email": "FunctionSendEmail", "review-request": "FunctionReviewRequest", "structured-data-fetch": "FunctionStructuredDataFetch"} {
		if got := FunctionPlaceholder(in); got != want {
			t.Errorf("FunctionPlaceholder(%q) = %q, want %q", in, got, want)
		}
	}
}

// A tool's Task waits for the function's timeout and Lambda's Init phase:
// it can never time out while its function may still run the tool.
func TestTaskTimeoutCoversTheFunctionAndItsInit(t *testing.T) {
	for _, name := range Default().Names() {
		tl, _ := Default().Lookup(name)
		if got, want := tl.TaskTimeoutSeconds(), tl.FunctionTimeoutSeconds+10; got != want {
			t.Errorf("%s: Task timeout %d s, want the function's %d s plus 10 s of Init", tl.Name, got, tl.FunctionTimeoutSeconds)
		}
	}
	ok := `{"tools":[{"name":"x","policy":"at_least_once","retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":1},"function_timeout_seconds":900,"function":"x","input_schema":{},"output_schema":{}}]}`
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("900 s, Lambda's maximum: %v", err)
	}
}
