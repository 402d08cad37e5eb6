package receiver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/webhook-receiver/receiver"
)

func TestFunctionConfigFromEnvReadsDefaultsAndNamesTheBadVariable(t *testing.T) {
	base := map[string]string{"TOOLGATE_TABLE": "t", "TOOLGATE_INBOUND_QUEUE": "https://sqs.us-east-1.amazonaws.com/1/q"}
	env := func(extra map[string]string) func(string) string {
		return func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		}
	}
	c, err := receiver.FunctionConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != "t" || c.Retention != 90*24*time.Hour || c.RelayAfter != 2*time.Minute || c.SecretCache != 5*time.Minute {
		t.Errorf("defaults %+v", c)
	}
	c, err = receiver.FunctionConfigFromEnv(env(map[string]string{"TOOLGATE_INBOUND_RETENTION_DAYS": "3", "TOOLGATE_INBOUND_RELAY_AFTER": "5s", "TOOLGATE_INBOUND_SECRET_CACHE": "1m"}))
	if err != nil || c.Retention != 72*time.Hour || c.RelayAfter != 5*time.Second || c.SecretCache != time.Minute {
		t.Errorf("set: %+v, %v", c, err)
	}
	for _, c := range []struct{ name, value string }{
		{"TOOLGATE_TABLE", ""},
		{"TOOLGATE_INBOUND_QUEUE", ""},
		{"TOOLGATE_INBOUND_RETENTION_DAYS", "2"},
		{"TOOLGATE_INBOUND_RETENTION_DAYS", "401"},
		{"TOOLGATE_INBOUND_RETENTION_DAYS", "90d"},
		{"TOOLGATE_INBOUND_RELAY_AFTER", "500ms"},
		{"TOOLGATE_INBOUND_RELAY_AFTER", "2"},
		{"TOOLGATE_INBOUND_SECRET_CACHE", "2h"},
	} {
		_, err := receiver.FunctionConfigFromEnv(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s=%q: %v, want an error naming it", c.name, c.value, err)
		}
	}
}
