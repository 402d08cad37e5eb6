package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
)

// request is what IAM sees of one DynamoDB request (docs/infra.md, "Least
// privilege"): its action, the partition key it reaches
// (dynamodb:LeadingKeys), the index it reads, every attribute it names
// (dynamodb:Attributes: the key, the item written, and each expression's
// top-level names) and its ReturnValues; and whether it reads consistently.
type request struct {
	Action     table.Action
	PK, Index  string
	Attributes []string
	Whole      bool // a GetItem without a projection
	Consistent bool
	// ReturnValues of an UpdateItem, and
	// ReturnValuesOnConditionCheckFailure of a PutItem.
	ReturnValues, OnConditionFailure string
}

// recorder passes each request to DynamoDB and records it.
type recorder struct {
	dynamo.API
	mu   sync.Mutex
	reqs []request
}

func (r *recorder) add(q request) {
	slices.Sort(q.Attributes)
	q.Attributes = slices.Compact(q.Attributes)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, q)
}

// take returns the requests recorded since the last take.
func (r *recorder) take() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

func pkOf(key map[string]types.AttributeValue) string {
	v, _ := key[table.PK].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	names := slices.Concat(slices.Collect(maps.Keys(in.Key)), in.AttributesToGet, table.ExpressionAttributes(in.ProjectionExpression, in.ExpressionAttributeNames))
	r.add(request{Action: table.GetItem, PK: pkOf(in.Key), Attributes: names, Whole: in.ProjectionExpression == nil && len(in.AttributesToGet) == 0,
		Consistent: aws.ToBool(in.ConsistentRead)})
	return r.API.GetItem(ctx, in, opts...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	names := slices.Concat(slices.Collect(maps.Keys(in.Item)), table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames))
	r.add(request{Action: table.PutItem, PK: pkOf(in.Item), Attributes: names, ReturnValues: string(in.ReturnValues),
		OnConditionFailure: string(in.ReturnValuesOnConditionCheckFailure)})
	return r.API.PutItem(ctx, in, opts...)
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	names := slices.Concat(slices.Collect(maps.Keys(in.Key)), table.ExpressionAttributes(in.UpdateExpression, in.ExpressionAttributeNames),
		table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames))
	r.add(request{Action: table.UpdateItem, PK: pkOf(in.Key), Attributes: names, ReturnValues: string(in.ReturnValues),
		OnConditionFailure: string(in.ReturnValuesOnConditionCheckFailure)})
	return r.API.UpdateItem(ctx, in, opts...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	var names []string
	for _, e := range []*string{in.KeyConditionExpression, in.FilterExpression, in.ProjectionExpression} {
		names = append(names, table.ExpressionAttributes(e, in.ExpressionAttributeNames)...)
	}
	// A Query of the table: its partition key is the key condition's
	// value that starts with a kind's prefix (a sort key's begins_with
	// value starts with none).
	pk := ""
	for _, v := range in.ExpressionAttributeValues {
		if sv, ok := v.(*types.AttributeValueMemberS); ok && in.IndexName == nil &&
			slices.ContainsFunc(table.Prefixes(), func(p string) bool { return strings.HasPrefix(sv.Value, p) }) {
			pk = sv.Value
		}
	}
	r.add(request{Action: table.Query, PK: pk, Index: aws.ToString(in.IndexName), Attributes: names, Whole: in.ProjectionExpression == nil,
		Consistent: aws.ToBool(in.ConsistentRead)})
	return r.API.Query(ctx, in, opts...)
}

func access(t *testing.T, sid string) table.Access {
	t.Helper()
	for _, a := range table.Accesses {
		if a.Sid == sid {
			return a
		}
	}
	t.Fatalf("no access %s in table.Accesses", sid)
	return table.Access{}
}

// Each store method makes exactly the requests its access in
// table.Accesses declares: the action, on the declared kind's partition
// keys or the declared index, naming exactly the attributes listed here
// (which the access allows: IAM's dynamodb:Attributes), reading
// consistently, asking no ReturnValues. A refactoring that names one more
// attribute, or reads another way, fails here before it fails on AWS.
func TestRequestsAreTheDeclaredAccesses(t *testing.T) {
	l := newLedgerTable(t)
	rec := &recorder{API: l.db}
	s := dynamo.NewStore(rec, tableName)
	ctx := context.Background()
	r, err := review.New(params(nPending, false))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := review.New(params(nNoTask, true))
	if err != nil {
		t.Fatal(err)
	}
	key := runARN(nPending) + "/3"

	type want struct {
		sid        string
		attributes []string // nil: a whole item
		onFailure  string
	}
	created := []string{"created_at", "deadline", "expires_at", "input", "input_bytes", "input_digest", "of", "pk", "requester",
		"review_id", "review_list_pk", "review_list_sk", "reviewers", "run_id", "sk", "status", "step", "task_token", "timeout_seconds",
		"tool", "toolset_id"}
	for _, c := range []struct {
		name string
		do   func() error
		want []want
	}{
		{"Create", func() error { _, _, err := s.Create(ctx, r); return err }, []want{{sid: "CreateReviews", attributes: created}}},
		{"Create of an existing review", func() error { _, _, err := s.Create(ctx, r); return err },
			[]want{{sid: "CreateReviews", attributes: created}, {sid: "ReadReviews"}}},
		{"Create without a task token", func() error { _, _, err := s.Create(ctx, rd); return err },
			[]want{{sid: "CreateReviews", attributes: slices.DeleteFunc(slices.Clone(created), func(a string) bool { return a == "task_token" })}}},
		{"Get", func() error { _, err := s.Get(ctx, r.ID); return err }, []want{{sid: "ReadReviews"}}},
		{"GetApproval", func() error { _, err := s.GetApproval(ctx, r.ID); return err },
			[]want{{sid: "ReadApprovals", attributes: []string{"approved_digest", "approver", "authenticated", "bound_key", "deadline", "decided_at", "delivery",
				"delivery_error", "edits", "expires_at", "input_digest", "kind", "of", "pk", "review_id", "run_id", "sk", "status", "step", "tool", "toolset_id"}}}},
		{"NoteSelfApproval", func() error { return s.NoteSelfApproval(ctx, r.ID) },
			[]want{{sid: "DecideReviews", attributes: []string{"pk", "self_approval_refusals", "sk"}}}},
		{"Decide", func() error {
			_, cur, err := s.Decide(ctx, r, review.Approve, alice, true, "ok", time.Minute)
			if cur != nil {
				r = cur
			}
			return err
		}, []want{{sid: "DecideReviews", attributes: []string{"approver", "authenticated", "deadline", "decided_at", "decision_token", "delivery",
			"delivery_lease_until", "expires_at", "pk", "reason", "review_list_pk", "sk", "status"}}, {sid: "ReadReviews"}}},
		{"Decide of a decided review", func() error {
			_, _, err := s.Decide(ctx, r, review.Approve, alice, true, "ok", time.Minute)
			return err
		},
			[]want{{sid: "DecideReviews", attributes: []string{"approver", "authenticated", "deadline", "decided_at", "decision_token", "delivery",
				"delivery_lease_until", "expires_at", "pk", "reason", "review_list_pk", "sk", "status"}}, {sid: "ReadReviews"}}},
		{"FinishDelivery releasing", func() error { return s.FinishDelivery(ctx, r, review.Delivering, "") },
			[]want{{sid: "DecideReviews", attributes: []string{"delivery", "delivery_lease_until", "pk", "sk"}}}},
		{"ClaimDelivery", func() error {
			r.DeliveryLeaseUntil = time.UnixMilli(0)
			_, err := s.ClaimDelivery(ctx, r, time.Minute)
			return err
		},
			[]want{{sid: "DecideReviews", attributes: []string{"delivery", "delivery_lease_until", "pk", "sk"}}}},
		{"FinishDelivery ending", func() error { return s.FinishDelivery(ctx, r, review.TaskEnded, "TaskTimedOut") },
			[]want{{sid: "DecideReviews", attributes: []string{"delivered_at", "delivery", "delivery_error", "delivery_lease_until", "pk", "sk"}}}},
		{"Bind", func() error { _, _, err := s.Bind(ctx, r, key); return err },
			[]want{{sid: "BindApprovals", attributes: []string{"bound_at", "bound_key", "expires_at", "pk", "sk"}, onFailure: "ALL_OLD"}}},
		{"Bind of a bound approval", func() error { _, _, err := s.Bind(ctx, r, key+"0"); return err },
			[]want{{sid: "BindApprovals", attributes: []string{"bound_at", "bound_key", "expires_at", "pk", "sk"}, onFailure: "ALL_OLD"}, {sid: "ReadBindRecons"}}},
		{"BoundKey", func() error { _, err := s.BoundKey(ctx, r.ID); return err }, []want{{sid: "ReadBindRecons"}}},
		{"List", func() error { _, err := s.List(ctx, review.Pending, nil); return err },
			[]want{{sid: "ListReviews", attributes: []string{"review_list_pk"}}}},
		{"RecordStart", func() error { return s.RecordStart(ctx, runARN(nStart), requester) },
			[]want{{sid: "RecordStarts", attributes: []string{"expires_at", "pk", "sk", "starter"}}}},
		{"Starter", func() error { _, err := s.Starter(ctx, runARN(nStart)); return err }, []want{{sid: "ReadStarts"}}},
		{"RecordChildStart", func() error { return s.RecordChildStart(ctx, childARN(nChildTaken), childRecord(nChildTaken)) },
			[]want{{sid: "RecordStarts", attributes: []string{"child_started_at", "end_user_scope", "expires_at", "forked_from", "input_digest", "parent_run_id", "pk", "released_at",
				"rerun_reads", "sk", "starter", "state_machine_arn"}}}},
		{"RecordChildPointer", func() error {
			return s.RecordChildPointer(ctx, runARN(nStart), review.ChildPointer{Step: "open", Seq: "4.1.2", ChildRunID: childARN(nChildTaken)})
		}, []want{{sid: "RecordChildPointers", attributes: []string{"child_attempt", "child_run_id", "expires_at", "pk", "sk"}}}},
		{"ChildPointers", func() error { _, err := s.ChildPointers(ctx, runARN(nStart), "open", []int64{1}); return err },
			[]want{{sid: "ReadChildPointers", attributes: []string{"child_attempt", "child_run_id", "pk", "sk"}}}},
		{"RecordRunStart with an end user", func() error {
			return s.RecordRunStart(ctx, runARN(nStart)+"-eu", requester, "sha256:"+strings.Repeat("0", 64), review.EndUserRecord{ID: "customer-1", Scope: "end_user:" + strings.Repeat("a", 64)})
		}, []want{{sid: "RecordStarts", attributes: []string{"deadline", "end_user", "end_user_scope", "expires_at", "input_digest", "pk", "sk", "starter"}}}},
		{"Start", func() error { _, err := s.Start(ctx, runARN(nStart)); return err }, []want{{sid: "ReadStarts"}}},
		{"TakeChildStart", func() error { return s.TakeChildStart(ctx, childARN(nChildTaken), childStart) },
			[]want{{sid: "UpdateStarts", attributes: []string{"child_started_at", "parent_run_id", "pk", "released_at", "sk"}}}},
		{"ReleaseChildStart", func() error {
			// A taken record: the conditional update, then the read that
			// tells a taken record from another parent's.
			if err := s.ReleaseChildStart(ctx, childARN(nChildTaken), childRecord(nChildTaken).ParentRunID); !errors.Is(err, review.ErrChildTaken) {
				return fmt.Errorf("release a taken record: %v, want ErrChildTaken", err)
			}
			return nil
		}, []want{{sid: "UpdateStarts", attributes: []string{"child_started_at", "parent_run_id", "pk", "released_at", "sk"}}, {sid: "ReadStarts"}}},
		{"ChildStart", func() error { _, err := s.ChildStart(ctx, childARN(nChildTaken)); return err }, []want{{sid: "ReadStarts"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.do(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := rec.take()
			if len(got) != len(c.want) {
				t.Fatalf("%d requests %+v, want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				q, a := got[i], access(t, w.sid)
				kind := ""
				if q.Index == "" {
					for _, k := range a.On {
						if _, ok := k.ID(q.PK); ok {
							kind = k.Name
						}
					}
				}
				switch {
				case !slices.Contains(a.Actions, q.Action):
					t.Errorf("request %d %+v: access %s does not allow %s", i, q, w.sid, q.Action)
				case a.Index != nil && q.Index != a.Index.Name, a.Index == nil && kind == "":
					t.Errorf("request %d %+v: not on what access %s reaches", i, q, w.sid)
				case w.attributes == nil && !(q.Whole && slices.Equal(q.Attributes, []string{"pk", "sk"})):
					t.Errorf("request %d names %v (whole %v), want a whole item", i, q.Attributes, q.Whole)
				case w.attributes != nil && !slices.Equal(q.Attributes, w.attributes):
					t.Errorf("request %d names %v, want %v", i, q.Attributes, w.attributes)
				case q.ReturnValues != "" && q.ReturnValues != "NONE", q.OnConditionFailure != w.onFailure:
					t.Errorf("request %d asks ReturnValues %q, on a failed condition %q; want none, %q", i, q.ReturnValues, q.OnConditionFailure, w.onFailure)
				case q.Action == table.GetItem && !q.Consistent:
					t.Errorf("request %d reads eventually consistently", i)
				}
				if a.Attributes != nil {
					for _, n := range q.Attributes {
						if !slices.Contains(a.Attributes, n) {
							t.Errorf("request %d names %s, which access %s does not allow", i, n, w.sid)
						}
					}
				}
			}
		})
	}
}
