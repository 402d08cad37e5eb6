package publish

import (
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// strictDemo is demo's lock with create-ticket pinned as strictly as a
// pin can be, by a placeholder bound to no function.
func strictDemo(t *testing.T, lock []byte) []byte {
	t.Helper()
	ts, err := toolset.Parse(lock)
	if err != nil {
		t.Fatal(err)
	}
	p := ts.Tools["create-ticket"]
	p.Function, p.ReviewRequired, p.Policy, p.Idempotent, p.Retry = "${FunctionCloseTicket}", true, catalog.AtMostOnce, false, nil
	ts.Tools["create-ticket"] = p
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	doc, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// Registration refuses a toolset that pins a platform tool looser than
// its function's owners' floor, read with ListTags from the local Lambda
// stand-in, naming the tool, the pinned member and the tag [toolset-floor];
// and a tool whose floor cannot be read. Nothing is registered then.
func TestRegisterChecksTheFloor(t *testing.T) {
	const arn = "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	lock, err := os.ReadFile(demoLock)
	if err != nil {
		t.Fatal(err)
	}
	r, err := local.StartLambdaRouter(map[string]string{"create-ticket": "http://127.0.0.1:9/never-invoked"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.RequireTag(platformtool.TagTool, "test")
	client := lambda.New(lambda.Options{Region: local.Region, BaseEndpoint: aws.String(r.Endpoint()), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	tags := func(f platformtool.Floor, more map[string]string) map[string]string {
		t := f.Tags()
		t[platformtool.TagTool] = "test"
		maps.Copy(t, more)
		return t
	}
	demoFloor := platformtool.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true}
	bound := deployment.FileParams{toolset.ToolFunctionParam("test", "FunctionCreateTicket"): arn}

	e := newToolsetEnv(t)
	e.h.service.Floors = platformtool.NewFloors(client, 0, nil)
	for _, c := range []struct {
		name   string
		tags   map[string]string
		params deployment.FileParams
		fault  func()
		code   string
		says   []string
	}{
		{name: "a review the owners require", tags: tags(platformtool.Floor{AtLeastOnce: true, Idempotent: true}, nil), params: bound,
			code: publishapi.CodeRefused, says: []string{"[" + RuleFloor + "]", "tool create-ticket", "review_required false", "tag toolgate:review=required", "nothing was registered"}},
		{name: "idempotency the owners do not claim", tags: tags(platformtool.Floor{ReviewOptional: true, AtLeastOnce: true}, nil), params: bound,
			code: publishapi.CodeRefused, says: []string{"[" + RuleFloor + "]", "idempotent true", "tag toolgate:idempotent=false"}},
		{name: "a floor tag with a bad value", tags: tags(demoFloor, map[string]string{platformtool.TagReview: "never"}), params: bound,
			code: publishapi.CodeRefused, says: []string{"[" + RuleFloor + "]", "toolgate:review=\"never\""}},
		{name: "not tagged for the stage", tags: demoFloor.Tags(), params: bound,
			code: publishapi.CodeRefused, says: []string{"[" + RuleFloor + "]", "not tagged toolgate:tool for this stage"}},
		{name: "a placeholder bound to no function", tags: tags(demoFloor, nil), params: deployment.FileParams{},
			code: publishapi.CodeRefused, says: []string{"[" + RuleFloor + "]", "bound to no function in stage test"}},
		{name: "Lambda throttles", tags: tags(demoFloor, nil), params: bound,
			fault: func() { r.FailListTags(1, http.StatusTooManyRequests, "TooManyRequestsException") },
			code:  publishapi.CodeUnavailable, says: []string{"could not be read", "nothing was registered"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.SetTags("create-ticket", c.tags)
			e.h.service.Params = c.params
			if c.fault != nil {
				c.fault()
			}
			_, code, msg := e.register(t, "alice", lock)
			t.Logf("%s: %s", code, msg)
			if code != c.code {
				t.Fatalf("%s %s, want %s", code, msg, c.code)
			}
			for _, s := range c.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not say %q", msg, s)
				}
			}
			if n := e.toolsetItems(t); n != 0 {
				t.Fatalf("%d toolsets registered", n)
			}
		})
	}

	t.Run("a pin the floor admits is registered, and a derived one checked again", func(t *testing.T) {
		r.SetTags("create-ticket", tags(demoFloor, nil))
		e.h.service.Params = bound
		listed := r.TagsListed("create-ticket")
		if _, code, msg := e.register(t, "alice", lock); code != "" {
			t.Fatalf("%s %s", code, msg)
		}
		reviewed, err := os.ReadFile("../../../testdata/toolsets/demo-reviewed.lock.json")
		if err != nil {
			t.Fatal(err)
		}
		// The owners now claim no idempotency: demo-reviewed keeps demo's
		// idempotent true.
		r.SetTags("create-ticket", tags(platformtool.Floor{ReviewOptional: true, AtLeastOnce: true}, nil))
		if _, code, msg := e.register(t, "alice", reviewed); code != publishapi.CodeRefused || !strings.Contains(msg, "idempotent true") {
			t.Fatalf("%s %s, want %s naming idempotent true", code, msg, publishapi.CodeRefused)
		}
		if n := r.TagsListed("create-ticket") - listed; n != 2 {
			t.Fatalf("ListTags %d times, want 2", n)
		}
	})

	t.Run("the strictest pin is not read", func(t *testing.T) {
		listed := r.TagsListed("create-ticket")
		if _, code, msg := e.register(t, "alice", strictDemo(t, lock)); code != "" {
			t.Fatalf("%s %s", code, msg)
		}
		if n := r.TagsListed("create-ticket") - listed; n != 0 {
			t.Fatalf("ListTags %d times", n)
		}
	})
}
