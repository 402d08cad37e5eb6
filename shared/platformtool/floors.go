package platformtool

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolfloor"
	"github.com/toolgate/toolgate/shared/toolset"
)

// TagTool is toolfloor.TagTool, the tag that makes a function a
// platform tool of a stage.
const TagTool = toolfloor.TagTool

// FloorTTL is how long the proxy keeps a function's floor once read: a
// change of a function's floor tags takes effect for new calls within
// FloorTTL (each proxy container keeps its own reading).
const FloorTTL = 60 * time.Second

// TagLister is the one Lambda API call Floors makes.
type TagLister interface {
	ListTags(ctx context.Context, in *lambda.ListTagsInput, opts ...func(*lambda.Options)) (*lambda.ListTagsOutput, error)
}

// Floors reads platform tool functions' floors from their tags (Lambda
// ListTags, FloorFromTags), keeping each function's answer for a TTL.
// Only an answer is kept, never a failure to read one.
type Floors struct {
	client TagLister
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]readTags // function ARN without qualifier -> its tags
}

// readTags is a function's tags as ListTags answered them at at.
type readTags struct {
	at   time.Time
	tags map[string]string
}

// NewFloors returns a reader of floors with client, which keeps each
// function's tags for ttl (0: read them for every call; the proxy's is
// FloorTTL) by the clock now (nil: time.Now).
func NewFloors(client TagLister, ttl time.Duration, now func() time.Time) *Floors {
	if now == nil {
		now = time.Now
	}
	return &Floors{client: client, ttl: ttl, now: now, cache: map[string]readTags{}}
}

// Read returns the floor of the function arn, a Lambda function ARN
// (toolset.LambdaARNPattern; a qualifier is dropped, since Lambda tags a
// function, not its versions or aliases). Nothing is invoked. Errors are
// *tool.Error, never maybe applied:
//
//   - a floor tag whose value is neither of its two: TOOL_PERMISSION_DENIED
//     naming the tag (the function's owners must correct it: a floor that
//     cannot be read is not relaxed);
//   - Lambda's AccessDenied: TOOL_PERMISSION_DENIED (the function is not
//     tagged toolgate:tool for this stage, or the role lacks
//     lambda:ListTags);
//   - ResourceNotFound: TOOL_INTERNAL, as for Invoke: the function the
//     toolset names does not exist, the deployment's fault, which no retry
//     changes;
//   - another 4xx: TOOL_INTERNAL;
//   - a throttle, a Lambda 5xx, a lost connection: TOOL_UPSTREAM_UNAVAILABLE,
//     retryable.
func (f *Floors) Read(ctx context.Context, arn string) (Floor, error) {
	resource := unqualified(arn)
	now := f.now()
	f.mu.Lock()
	e, ok := f.cache[resource]
	f.mu.Unlock()
	if !ok || f.ttl <= 0 || now.Before(e.at) || now.Sub(e.at) >= f.ttl {
		out, err := f.client.ListTags(ctx, &lambda.ListTagsInput{Resource: aws.String(resource)})
		if err != nil {
			return Floor{}, mapListTagsError(err, resource)
		}
		e = readTags{at: now, tags: out.Tags}
		if f.ttl > 0 {
			f.mu.Lock()
			for k, old := range f.cache {
				if now.Sub(old.at) >= f.ttl {
					delete(f.cache, k)
				}
			}
			f.cache[resource] = e
			f.mu.Unlock()
		}
	}
	floor, err := FloorFromTags(e.tags)
	if err != nil {
		return Floor{}, tool.Errorf(tool.PermissionDenied, "no toolset may call the function %s until its owners correct %v", resource, err)
	}
	return floor, nil
}

// Admit reads the floor of the function arn (Read) and checks the pinned
// tool name against it (Floor.Admits): nil, or a *tool.Error.
func (f *Floors) Admit(ctx context.Context, name string, pinned toolset.Tool, arn string) error {
	floor, err := f.Read(ctx, arn)
	if err != nil {
		return err
	}
	return floor.Admits(name, pinned)
}

// Check returns the proxy's toolcall.Check (dispatch.Config.Check), which
// runs before a call's key is claimed: it resolves the function the
// pinned toolset names (fns.Resolve) and admits the call only when the
// pin is at least as strict as the function's floor (floors.Admit).
// The envelope's tolerate_duplicates (a Solution step's, compiled into
// its Task, or a direct-lane caller's) is consent to re-run a call whose
// outcome is unknown, as the pin's is (the dispatcher's claim reclaims an
// at_most_once key with either), so it too needs the floor's
// TolerateDuplicates (Floor.AdmitsConsent).
// Otherwise the call ends unclaimed with the *tool.Error, a REFUSED row,
// and nothing is invoked. A tool that names no function passes (the
// dispatcher refuses it).
func Check(fns *Functions, floors *Floors) toolcall.Check {
	return func(ctx context.Context, c *toolcall.Call) error {
		if !c.Pinned.Platform() {
			return nil
		}
		arn, err := fns.Resolve(ctx, c.Pinned.Function)
		if err != nil {
			return err
		}
		floor, err := floors.Read(ctx, arn)
		if err != nil {
			return err
		}
		if err := floor.Admits(c.Envelope.Tool, c.Pinned); err != nil {
			return err
		}
		return floor.AdmitsConsent(c.Envelope.Tool, c.Pinned, c.Envelope.TolerateDuplicates)
	}
}

// unqualified is a Lambda function ARN without its version or alias:
// arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME.
func unqualified(arn string) string {
	if parts := strings.SplitN(arn, ":", 8); len(parts) == 8 {
		return strings.Join(parts[:7], ":")
	}
	return arn
}

// mapListTagsError classifies a failed ListTags (Read). Nothing was
// invoked, so no error is maybe applied.
func mapListTagsError(err error, resource string) *tool.Error {
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return tool.Wrap(tool.Internal, err, "the function %s does not exist, so its floor cannot be read", resource)
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch code := api.ErrorCode(); {
		case status == http.StatusForbidden || strings.Contains(code, "AccessDenied"):
			return tool.Wrap(tool.PermissionDenied, err, "the tags of the function %s may not be read: it is not tagged %s for this stage, or the role lacks lambda:ListTags", resource, TagTool)
		case status == http.StatusTooManyRequests || code == "TooManyRequestsException":
			return tool.Wrap(tool.UpstreamUnavailable, err, "Lambda throttled the reading of the tags of the function %s", resource)
		case status >= 400 && status < 500:
			return tool.Wrap(tool.Internal, err, "Lambda refused to list the tags of the function %s (%s)", resource, excerpt.Bytes(code, 64, "…"))
		}
	}
	return tool.Wrap(tool.UpstreamUnavailable, err, "Lambda did not answer the reading of the tags of the function %s", resource)
}
