package request

import (
	"context"
	"errors"
	"sync"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// maxCachedRecords and maxCachedSchemaBytes bound the input records a
// container keeps: a record's schema is at most 64 KiB
// (resolver.MaxInputRecordBytes), and compiled (inputrecord.Read) it
// takes about twenty times that, over a MiB, in a function of 256 MB. A
// record that would pass either bound lets others go, any of them; a
// version whose record was let go is read again at its next start.
const (
	maxCachedRecords     = 256
	maxCachedSchemaBytes = 1 << 20
)

// recordCache keeps the input records of child versions for the life of
// the container, by version ARN, within maxCachedRecords and
// maxCachedSchemaBytes: a published state machine version never changes,
// and neither does the record in its definition. Only a record that was
// read whole is kept.
type recordCache struct {
	mu          sync.Mutex
	m           map[string]*inputrecord.Record
	schemaBytes int
}

func (c *recordCache) get(versionARN string) *inputrecord.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[versionARN]
}

func (c *recordCache) put(versionARN string, r *inputrecord.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*inputrecord.Record{}
	}
	if _, ok := c.m[versionARN]; ok || len(r.Schema) > maxCachedSchemaBytes {
		return
	}
	for arn, old := range c.m {
		if len(c.m) < maxCachedRecords && c.schemaBytes+len(r.Schema) <= maxCachedSchemaBytes {
			break
		}
		delete(c.m, arn)
		c.schemaBytes -= len(old.Schema)
	}
	c.m[versionARN] = r
	c.schemaBytes += len(r.Schema)
}

// checkChildInput checks the child's run input ($.input of its execution
// input) against the input record of the version the step starts, as
// toolgate run checks a run's input (shared/inputrecord): the child's
// state-size bound assumes its input fits its schema and
// policy.input_limit_bytes. A refused input is CodeInvalid naming the
// problems (JSON Pointers and keywords, never the values); so is a version
// whose definition has no record this function reads. Step Functions
// failing is CodeUnavailable, which the record Task retries.
func (h *Handler) checkChildInput(ctx context.Context, c *tool.ChildStart) error {
	if h.executions == nil {
		return review.Errorf(review.CodeForbidden, "this function cannot read state machines: a child's input cannot be checked")
	}
	in, err := review.ChildRunInput(c)
	if err != nil {
		return review.Errorf(review.CodeInvalid, "child start: input is not the child's execution input {input, meta}: %s", err.Error())
	}
	rec, err := h.childRecord(ctx, c.StateMachineARN)
	if err != nil {
		return err
	}
	err = rec.Check(in)
	var refused *inputrecord.Error
	switch {
	case errors.As(err, &refused):
		return review.Errorf(review.CodeInvalid, "child version %s refuses its input, and nothing was recorded or started: %s", excerpt.Bytes(c.StateMachineARN, 200, "..."), refused.Error())
	case err != nil:
		return review.Errorf(review.CodeInvalid, "child version %s: its input cannot be checked: %s", excerpt.Bytes(c.StateMachineARN, 200, "..."), err.Error())
	}
	return nil
}

// childRecord returns the input record of the child version versionARN,
// from the cache or from its definition (DescribeStateMachine).
func (h *Handler) childRecord(ctx context.Context, versionARN string) (*inputrecord.Record, error) {
	if r := h.inputRecords.get(versionARN); r != nil {
		return r, nil
	}
	def, err := h.executions.Definition(ctx, versionARN)
	switch {
	case errors.Is(err, review.ErrNotFound):
		return nil, review.Wrap(review.CodeInvalid, err, "child version %s does not exist", excerpt.Bytes(versionARN, 200, "..."))
	case errors.Is(err, review.ErrDenied):
		return nil, review.Wrap(review.CodeForbidden, err, "this function may not read child version %s: a workflow step starts only a version of this stage's Solutions", excerpt.Bytes(versionARN, 200, "..."))
	case err != nil:
		return nil, review.Wrap(review.CodeUnavailable, err, "Step Functions could not describe the child version %s", excerpt.Bytes(versionARN, 200, "..."))
	}
	r, err := inputrecord.Read([]byte(def))
	var newer *inputrecord.VersionError
	switch {
	case errors.Is(err, inputrecord.ErrNoRecord):
		return nil, review.Errorf(review.CodeInvalid, "child version %s has no input record (it was published by a toolgate before the record), so its input cannot be checked: "+
			"publish the child again, then this parent, which pins the child's version", excerpt.Bytes(versionARN, 200, "..."))
	case errors.As(err, &newer):
		return nil, review.Errorf(review.CodeInvalid, "child version %s has an input record of version %.20q, and this platform's review-request reads %q: deploy a newer toolgate platform",
			excerpt.Bytes(versionARN, 200, "..."), newer.Version, inputrecord.RecordVersion)
	case err != nil:
		return nil, review.Errorf(review.CodeInvalid, "child version %s: %s", excerpt.Bytes(versionARN, 200, "..."), err.Error())
	}
	h.inputRecords.put(versionARN, r)
	return r, nil
}
