package dynamo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Only failures that may pass on a second try are transient: a refused
// item is not.
func TestTransientTellsRetryableFailuresFromRefusals(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("connection reset by peer"), true},
		{context.DeadlineExceeded, true},
		{&types.ProvisionedThroughputExceededException{}, true},
		{&smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}, true},
		{&types.InternalServerError{}, true},
		{fmt.Errorf("put: %w", &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size", Fault: smithy.FaultClient}), false},
		{&types.ResourceNotFoundException{}, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
