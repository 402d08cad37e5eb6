package local_test

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/infra/local"
)

// The router answers the SDK's Invoke and ListTags as Lambda does: the
// function's answer with its function error marked, and the tags set for
// a function, by its unqualified ARN only.
func TestLambdaRouter(t *testing.T) {
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) == `"fail"` {
			io.WriteString(w, `{"errorType":"Runtime.ExitError","errorMessage":"exit status 2"}`)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(fn.Close)
	r, client := startRouter(t, fn.URL)
	const arn = "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"

	t.Run("Invoke", func(t *testing.T) {
		out, err := client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(arn + ":live"), Payload: []byte(`{"a":1}`)})
		if err != nil || string(out.Payload) != `{"a":1}` || out.FunctionError != nil {
			t.Fatalf("%+v %v", out, err)
		}
		out, err = client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String("create-ticket"), Payload: []byte(`"fail"`)})
		if err != nil || aws.ToString(out.FunctionError) != "Unhandled" {
			t.Fatalf("a function error: %+v %v", out, err)
		}
		var nf *types.ResourceNotFoundException
		if _, err := client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String("other")}); !errors.As(err, &nf) {
			t.Fatalf("an unknown function: %v", err)
		}
		if n := len(r.Sent("create-ticket")); n != 2 {
			t.Fatalf("sent %d payloads, want 2", n)
		}
	})

	listTags := func(resource string) (map[string]string, error) {
		out, err := client.ListTags(t.Context(), &lambda.ListTagsInput{Resource: aws.String(resource)})
		if err != nil {
			return nil, err
		}
		return out.Tags, nil
	}
	apiCode := func(err error) string {
		var api smithy.APIError
		if !errors.As(err, &api) {
			return ""
		}
		return api.ErrorCode()
	}

	t.Run("ListTags", func(t *testing.T) {
		if tags, err := listTags(arn); err != nil || tags == nil || len(tags) != 0 {
			t.Fatalf("no tags set: %v %v, want {}", tags, err)
		}
		want := map[string]string{"toolgate:tool": "local", "toolgate:review": "optional"}
		r.SetTags("create-ticket", want)
		if tags, err := listTags(arn); err != nil || !maps.Equal(tags, want) {
			t.Fatalf("%v %v, want %v", tags, err, want)
		}
		for _, bad := range []string{arn + ":live", "create-ticket", "arn:aws:iam::000000000000:role/x"} {
			if _, err := listTags(bad); apiCode(err) != "InvalidParameterValueException" {
				t.Errorf("%s: %v, want InvalidParameterValueException", bad, err)
			}
		}
		var nf *types.ResourceNotFoundException
		if _, err := listTags("arn:aws:lambda:us-east-1:000000000000:function:other"); !errors.As(err, &nf) {
			t.Errorf("an unknown function: %v", err)
		}
		if n := r.TagsListed("create-ticket"); n != 2 {
			t.Errorf("TagsListed %d, want 2 (a malformed resource names no function)", n)
		}
	})

	t.Run("RequireTag", func(t *testing.T) {
		r.RequireTag("toolgate:tool", "prod")
		if _, err := listTags(arn); apiCode(err) != "AccessDeniedException" {
			t.Fatalf("tagged for another stage: %v, want AccessDeniedException", err)
		}
		r.RequireTag("toolgate:tool", "local")
		if _, err := listTags(arn); err != nil {
			t.Fatalf("tagged for the stage: %v", err)
		}
	})

	t.Run("FailListTags", func(t *testing.T) {
		r.FailListTags(1, http.StatusTooManyRequests, "TooManyRequestsException")
		r.FailListTags(1, http.StatusInternalServerError, "ServiceException")
		var throttled *types.TooManyRequestsException
		if _, err := listTags(arn); !errors.As(err, &throttled) {
			t.Errorf("first: %v, want TooManyRequestsException", err)
		}
		var service *types.ServiceException
		if _, err := listTags(arn); !errors.As(err, &service) {
			t.Errorf("second: %v, want ServiceException", err)
		}
		if _, err := listTags(arn); err != nil {
			t.Errorf("third: %v", err)
		}
	})
}

// The router stands in for one account and region (LocalAccountID,
// Region), as Lambda does for a caller's own: an ARN in another region or
// account names no function of the router's, to Invoke and ListTags, and
// nothing is sent. With RequireTag, Invoke of a function without the tag is
// AccessDeniedException, as for the proxy's role, whose
// lambda:InvokeFunction is conditioned on aws:ResourceTag/toolgate:tool.
func TestLambdaRouterRefusesOtherAccountsRegionsAndUntaggedInvokes(t *testing.T) {
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }))
	t.Cleanup(fn.Close)
	r, client := startRouter(t, fn.URL)
	invoke := func(name string) error {
		_, err := client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(`{}`)})
		return err
	}
	r.SetTags("create-ticket", map[string]string{"toolgate:tool": "local"})
	for _, other := range []string{
		"arn:aws:lambda:eu-west-1:000000000000:function:create-ticket",
		"arn:aws:lambda:us-east-1:111111111111:function:create-ticket",
		"arn:aws:lambda:us-east-1:111111111111:function:create-ticket:live",
		"111111111111:function:create-ticket",
	} {
		var nf *types.ResourceNotFoundException
		if err := invoke(other); !errors.As(err, &nf) {
			t.Errorf("Invoke %s: %v, want ResourceNotFoundException", other, err)
		}
		if !strings.Contains(other, ":live") && strings.HasPrefix(other, "arn:") {
			if _, err := client.ListTags(t.Context(), &lambda.ListTagsInput{Resource: aws.String(other)}); !errors.As(err, &nf) {
				t.Errorf("ListTags %s: %v, want ResourceNotFoundException", other, err)
			}
		}
	}
	if n := len(r.Sent("create-ticket")); n != 0 {
		t.Fatalf("sent %d payloads to another account's or region's function", n)
	}
	r.RequireTag("toolgate:tool", "prod")
	var api smithy.APIError
	if err := invoke("arn:aws:lambda:us-east-1:000000000000:function:create-ticket"); !errors.As(err, &api) || api.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("a function not tagged for the stage: %v, want AccessDeniedException", err)
	}
	if n := len(r.Sent("create-ticket")); n != 0 {
		t.Fatalf("sent %d payloads to a function not tagged for the stage", n)
	}
	r.RequireTag("toolgate:tool", "local")
	if err := invoke("arn:aws:lambda:us-east-1:000000000000:function:create-ticket:live"); err != nil {
		t.Fatalf("a function tagged for the stage: %v", err)
	}
}

// startRouter starts a LambdaRouter with create-ticket served by url, and
// a Lambda client of it that makes one attempt per request; both are
// closed with t.
func startRouter(t *testing.T, url string) (*local.LambdaRouter, *lambda.Client) {
	t.Helper()
	r, err := local.StartLambdaRouter(map[string]string{"create-ticket": url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	client := lambda.NewFromConfig(awsConfig(t), func(o *lambda.Options) {
		o.BaseEndpoint = aws.String(r.Endpoint())
		o.RetryMaxAttempts = 1
	})
	return r, client
}
