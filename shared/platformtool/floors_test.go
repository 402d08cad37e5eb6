package platformtool

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

const ticketARN = "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"

// demoFloor is the floor the local stack gives create-ticket.
var demoFloor = Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true}

// router starts the local Lambda stand-in with create-ticket (never
// invoked here) tagged for stage "test" with tags, and returns it with a
// Lambda client as the proxy builds it (ClientOptions) pointed at it.
func router(t *testing.T, tags map[string]string) (*local.LambdaRouter, *lambda.Client) {
	t.Helper()
	r, err := local.StartLambdaRouter(map[string]string{"create-ticket": "http://127.0.0.1:9/never-invoked"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.RequireTag(TagTool, "test")
	r.SetTags("create-ticket", tags)
	return r, lambdaClient(r.Endpoint())
}

func lambdaClient(endpoint string) *lambda.Client {
	return lambda.New(lambda.Options{Region: local.Region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")}, ClientOptions)
}

// tagged is floor's tags and the stage tag, with more added.
func tagged(floor Floor, more map[string]string) map[string]string {
	tags := floor.Tags()
	tags[TagTool] = "test"
	maps.Copy(tags, more)
	return tags
}

// Read reads the function's floor with ListTags on its unqualified ARN,
// and maps what Lambda answers to the contract's codes, none maybe
// applied.
func TestFloorsRead(t *testing.T) {
	for _, c := range []struct {
		name  string
		tags  map[string]string
		arn   string
		fault func(*local.LambdaRouter)
		floor Floor
		code  tool.Code // "" floor
		says  string
	}{
		{name: "the example's floor", tags: tagged(demoFloor, nil), arn: ticketARN, floor: demoFloor},
		{name: "a qualified ARN reads the function's tags", tags: tagged(demoFloor, nil), arn: ticketARN + ":live", floor: demoFloor},
		{name: "only the stage tag: the strictest", tags: map[string]string{TagTool: "test"}, arn: ticketARN, floor: Floor{}},
		{name: "a tag that is neither value", tags: tagged(demoFloor, map[string]string{TagPolicy: "exactly_once"}), arn: ticketARN,
			code: tool.PermissionDenied, says: TagPolicy},
		{name: "not tagged for the stage: AccessDenied", tags: demoFloor.Tags(), arn: ticketARN,
			code: tool.PermissionDenied, says: "lambda:ListTags"},
		{name: "no such function", tags: tagged(demoFloor, nil), arn: "arn:aws:lambda:us-east-1:000000000000:function:close-ticket",
			code: tool.Internal, says: "does not exist"},
		{name: "throttled", tags: tagged(demoFloor, nil), arn: ticketARN,
			fault: func(r *local.LambdaRouter) { r.FailListTags(1, http.StatusTooManyRequests, "TooManyRequestsException") },
			code:  tool.UpstreamUnavailable, says: "throttled"},
		{name: "a Lambda fault", tags: tagged(demoFloor, nil), arn: ticketARN,
			fault: func(r *local.LambdaRouter) { r.FailListTags(1, http.StatusInternalServerError, "ServiceException") },
			code:  tool.UpstreamUnavailable, says: "did not answer"},
		{name: "Lambda unreachable", tags: tagged(demoFloor, nil), arn: ticketARN,
			fault: func(r *local.LambdaRouter) { r.Close() },
			code:  tool.UpstreamUnavailable, says: "did not answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, client := router(t, c.tags)
			if c.fault != nil {
				c.fault(r)
			}
			floor, err := NewFloors(client, FloorTTL, nil).Read(t.Context(), c.arn)
			if c.code == "" {
				if err != nil || floor != c.floor {
					t.Fatalf("%+v %v, want %+v", floor, err, c.floor)
				}
				return
			}
			te := tool.Classify(err)
			if te == nil || te.Code != c.code || te.MaybeApplied || !strings.Contains(te.Message, c.says) || floor != (Floor{}) {
				t.Fatalf("%+v %v, want %s saying %q", floor, err, c.code, c.says)
			}
		})
	}
}

// A function's tags are read once per TTL by the injected clock: a change
// is seen once the TTL has passed, a failure is not kept, and a TTL of 0
// reads them every time.
func TestFloorsTTL(t *testing.T) {
	r, client := router(t, tagged(demoFloor, nil))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	floors := NewFloors(client, time.Minute, func() time.Time { return now })
	read := func(want Floor) {
		t.Helper()
		if f, err := floors.Read(t.Context(), ticketARN); err != nil || f != want {
			t.Fatalf("%+v %v, want %+v", f, err, want)
		}
	}
	read(demoFloor)
	read(demoFloor)
	if n := r.TagsListed("create-ticket"); n != 1 {
		t.Fatalf("%d ListTags within the TTL, want 1", n)
	}
	// The owners require a review: not seen within the TTL, seen after.
	r.SetTags("create-ticket", tagged(Floor{AtLeastOnce: true, Idempotent: true}, nil))
	now = now.Add(59 * time.Second)
	read(demoFloor)
	now = now.Add(time.Second)
	read(Floor{AtLeastOnce: true, Idempotent: true})
	if n := r.TagsListed("create-ticket"); n != 2 {
		t.Fatalf("%d ListTags, want 2", n)
	}
	// A failure is not kept: the next call reads again.
	now = now.Add(time.Minute)
	r.FailListTags(1, http.StatusTooManyRequests, "TooManyRequestsException")
	if _, err := floors.Read(t.Context(), ticketARN); tool.Classify(err).Code != tool.UpstreamUnavailable {
		t.Fatalf("throttled: %v", err)
	}
	read(Floor{AtLeastOnce: true, Idempotent: true})
	read(Floor{AtLeastOnce: true, Idempotent: true})
	if n := r.TagsListed("create-ticket"); n != 4 {
		t.Fatalf("%d ListTags, want 4", n)
	}
	// Without a TTL, every read lists the tags.
	uncached := NewFloors(client, 0, func() time.Time { return now })
	for range 2 {
		if _, err := uncached.Read(t.Context(), ticketARN); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.TagsListed("create-ticket"); n != 6 {
		t.Fatalf("%d ListTags, want 6", n)
	}
}

// The proxy's check resolves the pinned function as Tool does and admits
// only a pin at least as strict as its floor; what is not a platform tool
// passes, and a function that cannot be resolved is the resolution's
// error.
func TestCheck(t *testing.T) {
	_, client := router(t, tagged(demoFloor, nil))
	demoPin := toolset.Tool{Function: "${FunctionCreateTicket}", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 30}
	params := map[string]string{"/toolgate/test/tool-function/FunctionCreateTicket/arn": ticketARN}
	for _, c := range []struct {
		name string
		pin  func(*toolset.Tool)
		code tool.Code // "" admitted
		says string
	}{
		{name: "the demo's pin", pin: func(*toolset.Tool) {}},
		{name: "by ARN", pin: func(p *toolset.Tool) { p.Function = ticketARN }},
		{name: "stricter", pin: func(p *toolset.Tool) { p.ReviewRequired, p.Policy = true, catalog.AtMostOnce }},
		{name: "tolerate_duplicates, which the owners refuse", pin: func(p *toolset.Tool) { p.TolerateDuplicates = true },
			code: tool.PermissionDenied, says: TagDuplicates + "=refuse"},
		{name: "not a platform tool", pin: func(p *toolset.Tool) { p.Function, p.TolerateDuplicates = "", true }},
		{name: "a placeholder bound to no function", pin: func(p *toolset.Tool) { p.Function = "${FunctionCloseTicket}" },
			code: tool.PermissionDenied, says: "no SSM parameter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := demoPin
			c.pin(&p)
			call := &toolcall.Call{Envelope: &tool.Envelope{Tool: "create-ticket"}, Pinned: p}
			err := Check(NewFunctions("test", &fakeSSM{params: params}), NewFloors(client, FloorTTL, nil))(context.Background(), call)
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if te := tool.Classify(err); te == nil || te.Code != c.code || te.MaybeApplied || !strings.Contains(te.Message, c.says) {
				t.Fatalf("%v, want %s saying %q", err, c.code, c.says)
			}
		})
	}
}

// The envelope's tolerate_duplicates (a Solution step's, compiled into its
// Task, or a direct-lane caller's) is consent to re-run a call whose
// outcome is unknown (the dispatcher's claim reclaims an at_most_once key
// with it). A function whose owners refuse duplicates refuses that consent
// as it refuses the pin's, before anything is claimed; a function whose
// owners tolerate them admits it, and so does an at_least_once pin, which
// the consent does not change.
func TestCheckRefusesACallConsentingToDuplicatesTheOwnersRefuse(t *testing.T) {
	atMostOnce := toolset.Tool{Function: ticketARN, Idempotent: true, Policy: catalog.AtMostOnce, TimeoutSeconds: 30}
	for _, c := range []struct {
		name  string
		floor Floor
		pin   toolset.Tool
		code  tool.Code // "" admitted
	}{
		{name: "the owners refuse duplicates", floor: demoFloor, pin: atMostOnce, code: tool.PermissionDenied},
		{name: "the strictest floor", floor: Floor{ReviewOptional: true, Idempotent: true}, pin: atMostOnce, code: tool.PermissionDenied},
		{name: "the owners tolerate duplicates", floor: Floor{ReviewOptional: true, Idempotent: true, TolerateDuplicates: true}, pin: atMostOnce},
		{name: "an at_least_once pin", floor: demoFloor, pin: toolset.Tool{Function: ticketARN, Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 30}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pin := c.pin
			_, client := router(t, tagged(c.floor, nil))
			call := &toolcall.Call{Envelope: &tool.Envelope{Tool: "create-ticket", TolerateDuplicates: true}, Pinned: pin}
			err := Check(NewFunctions("test", &fakeSSM{}), NewFloors(client, FloorTTL, nil))(t.Context(), call)
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			te := tool.Classify(err)
			if te == nil || te.Code != c.code || te.MaybeApplied || !strings.Contains(te.Message, TagDuplicates+"=refuse") || !strings.Contains(te.Message, "tolerate_duplicates") {
				t.Fatalf("%v, want %s naming tolerate_duplicates and %s=refuse", err, c.code, TagDuplicates)
			}
		})
	}
}
