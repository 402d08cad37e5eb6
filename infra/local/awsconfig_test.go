package local_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
)

// recorder is an endpoint that answers every request with an empty JSON
// object and remembers the access key id of each request's signature.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cred, _, _ := strings.Cut(strings.TrimPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="), "/")
		r.mu.Lock()
		r.keys = append(r.keys, cred)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// The loader takes region, credentials and each service's endpoint from
// its map, and none of them from the process's environment.
func TestAWSConfigLoaderReadsTheMapNotTheProcess(t *testing.T) {
	dynamo, states, elsewhere := newRecorder(t), newRecorder(t), newRecorder(t)
	// The process points DynamoDB elsewhere, with other keys: the map wins.
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", elsewhere.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPROCESS")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "process")
	t.Setenv("AWS_REGION", "eu-west-3")
	load := local.AWSConfigLoader(map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDMAP", "AWS_SECRET_ACCESS_KEY": "map",
		"AWS_ENDPOINT_URL_DYNAMODB": dynamo.URL, "AWS_ENDPOINT_URL_SFN": states.URL})
	cfg, err := load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "us-east-1" {
		t.Fatalf("region %q, want the map's us-east-1", cfg.Region)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sfn.NewFromConfig(cfg).ListStateMachines(t.Context(), &sfn.ListStateMachinesInput{}); err != nil {
		t.Fatal(err)
	}
	if got := dynamo.seen(); len(got) != 1 || got[0] != "AKIDMAP" {
		t.Fatalf("DynamoDB endpoint saw %v, want one request signed with AKIDMAP", got)
	}
	if got := states.seen(); len(got) != 1 || got[0] != "AKIDMAP" {
		t.Fatalf("Step Functions endpoint saw %v, want one request signed with AKIDMAP", got)
	}
	if got := elsewhere.seen(); len(got) != 0 {
		t.Fatalf("the process's endpoint saw %v", got)
	}
}

// Without an access key id in the map there are no credentials, even when
// the process has some.
func TestAWSConfigLoaderWithoutKeysHasNoCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPROCESS")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "process")
	cfg, err := local.AWSConfigLoader(map[string]string{"AWS_REGION": "us-east-1"})(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfg.Credentials.Retrieve(t.Context()); err == nil {
		t.Fatalf("credentials %s from the process", c.AccessKeyID)
	}
}
