package coldstart

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// clearEndpointEnv removes the endpoint variables from the process for a
// test: the SDK's clients read AWS_ENDPOINT_URL there themselves.
func clearEndpointEnv(t *testing.T) {
	for _, k := range []string{EnvEndpointURL, EnvEndpointURL + "_DYNAMODB", EnvEndpointURL + "_SFN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// lambdaEnv is the environment the Lambda runtime sets, plus endpoints.
func lambdaEnv(extra map[string]string) func(string) string {
	env := map[string]string{
		EnvRegion: "eu-west-1", EnvAccessKeyID: "AKIDLAMBDAROLE", EnvSecretAccessKey: "secret", EnvSessionToken: "token",
	}
	for k, v := range extra {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

// recorder answers every request with an empty JSON object and keeps the
// Authorization and session token headers it saw.
type recorder struct {
	mu    sync.Mutex
	auth  []string
	token []string
}

func (r *recorder) server(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.token = append(r.token, req.Header.Get("X-Amz-Security-Token"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// A client built from LambdaConfig goes to its service's endpoint
// variable, signs with the runtime's credentials for the runtime's region,
// and sends the session token.
func TestLambdaConfigSignsWithTheRuntimesCredentialsAtTheServicesEndpoint(t *testing.T) {
	clearEndpointEnv(t)
	var ddb, other recorder
	cfg, err := LambdaConfig(lambdaEnv(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": ddb.server(t), "AWS_ENDPOINT_URL_SFN": other.server(t)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if len(ddb.auth) != 1 || len(other.auth) != 0 {
		t.Fatalf("DynamoDB's endpoint got %d requests, Step Functions' %d: want 1 and 0", len(ddb.auth), len(other.auth))
	}
	if a := ddb.auth[0]; !strings.Contains(a, "Credential=AKIDLAMBDAROLE/") || !strings.Contains(a, "/eu-west-1/dynamodb/aws4_request") {
		t.Errorf("Authorization %q: want the runtime's key, region eu-west-1, service dynamodb", a)
	}
	if ddb.token[0] != "token" {
		t.Errorf("session token %q, want the runtime's", ddb.token[0])
	}
}

// AWS_ENDPOINT_URL serves every service without an endpoint of its own.
func TestLambdaConfigFallsBackToTheGlobalEndpoint(t *testing.T) {
	clearEndpointEnv(t)
	var all recorder
	cfg, err := LambdaConfig(lambdaEnv(map[string]string{EnvEndpointURL: all.server(t)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sfn.NewFromConfig(cfg).ListStateMachines(context.Background(), &sfn.ListStateMachinesInput{}); err != nil {
		t.Fatal(err)
	}
	if len(all.auth) != 1 {
		t.Fatalf("the global endpoint got %d requests, want 1", len(all.auth))
	}
}

// Without the runtime's region or keys a function does not start; the
// error names the variable.
func TestLambdaConfigRefusesAMissingRegionOrKey(t *testing.T) {
	for _, name := range []string{EnvRegion, EnvAccessKeyID, EnvSecretAccessKey} {
		_, err := LambdaConfig(lambdaEnv(map[string]string{name: ""}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v, want an error naming it", name, err)
		}
	}
}

// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true makes clients ignore the
// endpoint variables, as the SDK's shared configuration does; the FIPS and
// dual-stack variables reach the clients' endpoint resolution.
func TestLambdaConfigHonoursTheSDKsOtherEndpointVariables(t *testing.T) {
	clearEndpointEnv(t)
	cfg, err := LambdaConfig(lambdaEnv(map[string]string{EnvEndpointURL: "http://127.0.0.1:1", EnvIgnoreEndpointURLs: "true",
		EnvUseFIPSEndpoint: "true", EnvUseDualStack: "false"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("BaseEndpoint %q with endpoints ignored", *cfg.BaseEndpoint)
	}
	src := cfg.ConfigSources[0].(envSource)
	if ignore, found, _ := src.GetIgnoreConfiguredEndpoints(context.Background()); !ignore || !found {
		t.Error("the ignore variable is not reported")
	}
	if v, found, _ := src.GetUseFIPSEndpoint(context.Background()); v != aws.FIPSEndpointStateEnabled || !found {
		t.Errorf("FIPS %v %v", v, found)
	}
	if v, found, _ := src.GetUseDualStackEndpoint(context.Background()); v != aws.DualStackEndpointStateDisabled || !found {
		t.Errorf("dual-stack %v %v", v, found)
	}
	if _, found, _ := envSource(lambdaEnv(nil)).GetUseFIPSEndpoint(context.Background()); found {
		t.Error("FIPS reported without the variable")
	}
}
