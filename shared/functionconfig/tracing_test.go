package functionconfig_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// Off, an OTLP/HTTP receiver's base URL, or a refusal naming the rule and
// never the credentials a URL might hold.
func TestParseTracingReadsOffOrAnOTLPReceiver(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "",
		"off":                               "",
		"otlp:http://127.0.0.1:4318":        "http://127.0.0.1:4318",
		"otlp:http://localhost:4318/":       "http://localhost:4318",
		"otlp:https://collector.example/ot": "https://collector.example/ot",
	} {
		if got, err := functionconfig.ParseTracing(in); err != nil || got != want {
			t.Fatalf("ParseTracing(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"on", "OFF", "otlp:", "otlp:127.0.0.1:4318", "otlp:ftp://h/", "otlp:http://user:s3cret@h/", "otlp:http://h/?k=s3cret", "otlp:http://h/#s3cret", "otlp:http://h/#", "otlp:http://h/?", "xray"} {
		_, err := functionconfig.ParseTracing(bad)
		if err == nil {
			t.Fatalf("ParseTracing(%q) accepted", bad)
		}
		if !strings.Contains(err.Error(), functionconfig.EnvTracing) || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("ParseTracing(%q): %v", bad, err)
		}
	}
}
