package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/table"
)

// Retention is how long a shape item lives after its last update before
// DynamoDB's TTL (expires_at) ends it: a year. A shape still in use is
// then learned again, with one write; one no longer in use (a host no
// longer called, an output schema replaced) goes.
const Retention = 365 * 24 * time.Hour

// DB is the part of the DynamoDB client a Store calls.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Store reads and updates shape items in one table.
type Store struct {
	db    DB
	table string
	// now is the clock of updated_at and expires_at.
	now func() time.Time
}

// New returns the Store of table tableName, on db, with the system clock.
func New(db DB, tableName string) *Store {
	return &Store{db: db, table: tableName, now: time.Now}
}

// WithClock returns a copy of s whose updated_at and expires_at come
// from now.
func (s *Store) WithClock(now func() time.Time) *Store {
	c := *s
	c.now = now
	return &c
}

// key is the item key of id: the partition of its tool, source and
// output schema digest, the sort key of its host.
func key(id observed.Identity) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: table.Shape.Key(id.PartitionKey())},
		table.SK: &types.AttributeValueMemberS{Value: table.ShapeSK(id.Host)},
	}
}

// Get reads the shape learned under id: one consistent GetItem
// projecting table.ShapeRead. No item: a nil shape and version 0. An item
// whose shape does not read is observed.ErrBadItem; a failed request its error.
func (s *Store) Get(ctx context.Context, id observed.Identity) (*observed.Shape, int64, error) {
	names := map[string]string{}
	proj := ""
	for i, n := range table.ShapeRead {
		ph := "#a" + strconv.Itoa(i)
		names[ph] = n
		if proj != "" {
			proj += ", "
		}
		proj += ph
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(proj), ExpressionAttributeNames: names,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read shape: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, 0, nil
	}
	body, ok := out.Item["shape"].(*types.AttributeValueMemberS)
	ver, ok2 := out.Item["version"].(*types.AttributeValueMemberN)
	if !ok || !ok2 {
		return nil, 0, fmt.Errorf("read shape: %w: no shape or version", observed.ErrBadItem)
	}
	v, err := strconv.ParseInt(ver.Value, 10, 64)
	if err != nil || v < 1 {
		return nil, 0, fmt.Errorf("read shape: %w: version is no positive whole number", observed.ErrBadItem)
	}
	shape, err := observed.Unmarshal([]byte(body.Value))
	if err != nil {
		return nil, 0, fmt.Errorf("read shape: %w", observed.ErrBadItem)
	}
	return shape, v, nil
}

// Put writes shape under id as version read+1, and adds learned (the
// results seen since the last update, at least 1) to learned_from: one
// UpdateItem, conditional on attribute_not_exists(pk) when read is 0,
// else on version = read. It reports false, with no error, when the
// condition failed (another container updated the item since it was
// read, or created it): the caller reads it again at its next use. It
// sets tool and, when id has one, from_host; updated_at and expires_at
// (now and Retention) from the Store's clock.
func (s *Store) Put(ctx context.Context, id observed.Identity, shape *observed.Shape, read, learned int64) (bool, error) {
	body, err := shape.Marshal()
	if err != nil {
		return false, fmt.Errorf("write shape: %w", err)
	}
	if learned < 1 {
		learned = 1
	}
	now := s.now().UTC()
	names := map[string]string{"#shape": "shape", "#version": "version", "#tool": "tool",
		"#learned": "learned_from", "#updated": "updated_at", "#exp": table.ExpiresAt}
	values := map[string]types.AttributeValue{
		":shape":   &types.AttributeValueMemberS{Value: string(body)},
		":next":    &types.AttributeValueMemberN{Value: strconv.FormatInt(read+1, 10)},
		":tool":    &types.AttributeValueMemberS{Value: id.Tool},
		":learned": &types.AttributeValueMemberN{Value: strconv.FormatInt(learned, 10)},
		":updated": &types.AttributeValueMemberS{Value: now.Format(time.RFC3339)},
		":exp":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(Retention).Unix(), 10)},
	}
	update := "SET #shape = :shape, #version = :next, #tool = :tool, #updated = :updated, #exp = :exp"
	if id.Host != "" {
		names["#host"] = "from_host"
		values[":host"] = &types.AttributeValueMemberS{Value: id.Host}
		update += ", #host = :host"
	}
	update += " ADD #learned :learned"
	cond := "attribute_not_exists(#pk)"
	names["#pk"] = table.PK
	if read > 0 {
		delete(names, "#pk")
		cond = "#version = :read"
		values[":read"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(read, 10)}
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(id), UpdateExpression: aws.String(update),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValues: types.ReturnValueNone,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("write shape: %w", err)
	}
	return true, nil
}

// MaxListed bounds the shape items List reads of one partition
// (observed.MaxFileHosts, the most a shapes file holds per tool).
const MaxListed = observed.MaxFileHosts

// Listed is one shape item List read.
type Listed struct {
	// Host is the host the shape was learned from; "" for a whole
	// result's shape.
	Host string
	// LearnedFrom is the item's learned_from (at least 1).
	LearnedFrom int64
	// Shape is the item's shape.
	Shape *observed.Shape
}

// List reads every shape learned under id's partition (id.Host is not
// looked at): the whole result's, or one per host for structured-data-
// fetch and http, in sort key order (hosts in byte order). It Queries the
// partition, projecting table.ShapeListed, in pages, at most MaxListed
// items; an item that does not read (no shape, a shape Unmarshal refuses,
// no positive learned_from, a sort key that is no shape's) is skipped and
// counted in skipped. A failed request is its error, naming no item.
func (s *Store) List(ctx context.Context, id observed.Identity) (shapes []Listed, skipped int, err error) {
	names := map[string]string{"#pk": table.PK}
	proj := ""
	for i, n := range table.ShapeListed {
		ph := "#a" + strconv.Itoa(i)
		names[ph] = n
		if proj != "" {
			proj += ", "
		}
		proj += ph
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: aws.String("#pk = :pk"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: table.Shape.Key(id.PartitionKey())}},
		ProjectionExpression:      aws.String(proj), ConsistentRead: aws.Bool(true),
	}
	for {
		in.Limit = aws.Int32(int32(MaxListed - len(shapes) - skipped))
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, 0, fmt.Errorf("list shapes: %w", err)
		}
		for _, it := range out.Items {
			if l, ok := listed(it); ok {
				shapes = append(shapes, l)
			} else {
				skipped++
			}
		}
		if len(out.LastEvaluatedKey) == 0 || len(shapes)+skipped >= MaxListed {
			return shapes, skipped, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// listed reads one item of a List.
func listed(it map[string]types.AttributeValue) (Listed, bool) {
	sk, ok1 := it[table.SK].(*types.AttributeValueMemberS)
	body, ok2 := it["shape"].(*types.AttributeValueMemberS)
	n, ok3 := it["learned_from"].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 || !ok3 {
		return Listed{}, false
	}
	host, ok := table.ShapeHost(sk.Value)
	if !ok || (host != "" && !observed.HostPattern.MatchString(host)) {
		return Listed{}, false
	}
	count, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || count < 1 {
		return Listed{}, false
	}
	shape, err := observed.Unmarshal([]byte(body.Value))
	if err != nil {
		return Listed{}, false
	}
	return Listed{Host: host, LearnedFrom: count, Shape: shape}, true
}
