package vault

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/table"
)

// DB is the part of the DynamoDB client the Store calls.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// ErrNotFound is returned for a credential or a toolset marker that does
// not exist.
var ErrNotFound = errors.New("not found")

// ErrSetByAnother is Put's error for a run-scope credential whose item
// exists and was set by another principal: a run's credential is its
// starter's, and a principal who learned the execution ARN must not
// replace it (docs/credentials.md, "Run credentials").
var ErrSetByAnother = errors.New("the run's credential was set by another principal")

// Store keeps credentials and their toolset markers in the ledger table
// (table.Credential, table.CredentialToolset): one partition per toolset
// name (table.Credential.Key). It holds ciphertext and metadata only.
type Store struct {
	db    DB
	table string
	now   func() time.Time
}

// NewStore returns a Store on the named table; now is its clock
// (time.Now when nil), which stamps created_at, registered_at and
// allowed_at.
func NewStore(db DB, tableName string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, table: tableName, now: now}
}

// Item is one credential as set: its target (the toolset name, the
// target's name and origin; Auth is not stored), its scope, what Seal
// made, who set it (a verified ARN) and when it expires.
type Item struct {
	Target credential.Target
	Scope  credential.Scope
	Sealed Sealed
	SetBy  string
	// ExpiresAt is the credential's own expiry (credential_expires_at,
	// whole seconds); zero: none.
	ExpiresAt time.Time
	// ExecutionARN is, for run scope only (required there), the run's
	// execution ARN, whose name the scope holds.
	ExecutionARN string
	// DeleteAfter is, for run scope only (required there), when DynamoDB's
	// TTL may delete the item (the table's expires_at): the run's latest
	// end and a day (docs/credentials.md, "Run credentials").
	DeleteAfter time.Time
	// Reopen is, for run scope only, a started run's credential set again
	// while the run waits for it (docs/credentials.md, "Run credentials"):
	// Put then replaces only an item that exists, set by SetBy for
	// ExecutionARN, at the target's origin, and creates none
	// (ErrSetByAnother otherwise).
	Reopen bool
}

// Metadata is what List shows of a credential: never its ciphertext or
// its encrypted data key.
type Metadata struct {
	Target, Origin string
	Scope          credential.Scope
	Version        int64
	CreatedAt      time.Time
	SetBy          string
	ExpiresAt      time.Time // zero: none
	ExecutionARN   string
	KeyID          string
}

// Marker is a toolset id's marker for a target's credentials at an
// origin: registered when the toolset was, allowed (AllowedBy set) by
// credentials set or allow.
type Marker struct {
	Target, Origin, ToolsetID string
	RegisteredAt              time.Time
	AllowedBy                 string
	AllowedAt                 time.Time
}

// Listing is a toolset name's credentials and markers, in sort key order.
type Listing struct {
	Credentials []Metadata
	Markers     []Marker
}

// credentialItem is a table.Credential item as written and read.
type credentialItem struct {
	PK                  string `dynamodbav:"pk"`
	SK                  string `dynamodbav:"sk"`
	CT                  []byte `dynamodbav:"ct,omitempty"`
	Nonce               []byte `dynamodbav:"nonce,omitempty"`
	EDK                 []byte `dynamodbav:"edk,omitempty"`
	KeyID               string `dynamodbav:"key_id,omitempty"`
	Version             int64  `dynamodbav:"version,omitempty"`
	CreatedAt           string `dynamodbav:"created_at,omitempty"`
	SetBy               string `dynamodbav:"set_by,omitempty"`
	CredentialExpiresAt int64  `dynamodbav:"credential_expires_at,omitempty"`
	ExecutionARN        string `dynamodbav:"execution_arn,omitempty"`
	ExpiresAt           int64  `dynamodbav:"expires_at,omitempty"`
}

// markerItem is a table.CredentialToolset item as written and read.
type markerItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	RegisteredAt string `dynamodbav:"registered_at,omitempty"`
	AllowedBy    string `dynamodbav:"allowed_by,omitempty"`
	AllowedAt    string `dynamodbav:"allowed_at,omitempty"`
}

// stamp is the form of created_at, registered_at and allowed_at: RFC 3339,
// UTC, whole seconds.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func parseStamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: pk},
		table.SK: &types.AttributeValueMemberS{Value: sk},
	}
}

func credentialKey(t credential.Target, s credential.Scope) map[string]types.AttributeValue {
	return key(table.Credential.Key(t.ToolsetName), table.CredentialSK(t.Name, t.Origin, string(s)))
}

func markerKey(t credential.Target, toolsetID string) map[string]types.AttributeValue {
	return key(table.CredentialToolset.Key(t.ToolsetName), table.CredentialToolsetSK(t.Name, t.Origin, toolsetID))
}

// checkKeyParts refuses a target whose name or origin holds a "#", which
// would make its sort keys ambiguous.
func checkKeyParts(t credential.Target) error {
	if t.ToolsetName == "" || t.Name == "" || t.Origin == "" {
		return errors.New("the target needs a toolset name, a name and an origin")
	}
	if strings.Contains(t.Name, "#") || strings.Contains(t.Origin, "#") {
		return fmt.Errorf("target %q or its origin holds a #", t.Name)
	}
	return nil
}

// Put stores it as the credential of its target and scope, replacing any:
// one UpdateItem that sets every attribute, removes those it does not
// have, and ADDs 1 to version (DynamoDB applies it atomically, so two sets
// never share a version). It returns the new version: 1 for a key that
// had none (revoke deletes the item, so a later set starts again at 1).
// A run-scope item set by another principal, or for another execution of
// the same name (another state machine's), is not replaced:
// ErrSetByAnother; with Item.Reopen, neither is a run-scope item that
// does not exist.
func (s *Store) Put(ctx context.Context, it Item) (version int64, err error) {
	if err := checkKeyParts(it.Target); err != nil {
		return 0, fmt.Errorf("put credential: %w", err)
	}
	if err := credential.ParseScope(string(it.Scope)); err != nil {
		return 0, fmt.Errorf("put credential: %w", err)
	}
	run := it.Scope.Kind() == credential.KindRun
	switch {
	case it.SetBy == "":
		return 0, errors.New("put credential: no setter")
	case len(it.Sealed.Ciphertext) == 0 || len(it.Sealed.Nonce) != nonceBytes || len(it.Sealed.EncryptedKey) == 0 || it.Sealed.KeyID == "":
		return 0, errors.New("put credential: the sealed value is incomplete")
	case run && (it.ExecutionARN == "" || it.DeleteAfter.IsZero()):
		return 0, errors.New("put credential: a run-scope credential needs its execution ARN and a time to delete it")
	case run && credential.RunScope(executionName(it.ExecutionARN)) != it.Scope:
		return 0, fmt.Errorf("put credential: execution %s is not the run of scope %s", it.ExecutionARN, it.Scope)
	case !run && (it.ExecutionARN != "" || !it.DeleteAfter.IsZero() || it.Reopen):
		return 0, errors.New("put credential: only a run-scope credential has an execution ARN, a time to delete it, or is set again after its run started")
	}
	u := expression.Set(expression.Name("ct"), expression.Value(it.Sealed.Ciphertext)).
		Set(expression.Name("nonce"), expression.Value(it.Sealed.Nonce)).
		Set(expression.Name("edk"), expression.Value(it.Sealed.EncryptedKey)).
		Set(expression.Name("key_id"), expression.Value(it.Sealed.KeyID)).
		Set(expression.Name("created_at"), expression.Value(stamp(s.now()))).
		Set(expression.Name("set_by"), expression.Value(it.SetBy)).
		Add(expression.Name("version"), expression.Value(1))
	if it.ExpiresAt.IsZero() {
		u = u.Remove(expression.Name("credential_expires_at"))
	} else {
		u = u.Set(expression.Name("credential_expires_at"), expression.Value(it.ExpiresAt.Unix()))
	}
	if run {
		u = u.Set(expression.Name("execution_arn"), expression.Value(it.ExecutionARN)).
			Set(expression.Name(table.ExpiresAt), expression.Value(it.DeleteAfter.Unix()))
	}
	b := expression.NewBuilder().WithUpdate(u)
	switch {
	case run && it.Reopen:
		// A started run's credential set again: only the one its setter
		// stored for this execution, at this origin (the key's), exists to
		// be replaced.
		b = b.WithCondition(expression.AttributeExists(expression.Name(table.PK)).
			And(expression.Name("set_by").Equal(expression.Value(it.SetBy))).
			And(expression.Name("execution_arn").Equal(expression.Value(it.ExecutionARN))))
	case run:
		// Only the run's first setter may replace its credential, and
		// only for the same execution: the scope names the execution
		// name alone, and another state machine's execution of that
		// name has a start record of its own.
		b = b.WithCondition(expression.AttributeNotExists(expression.Name(table.PK)).
			Or(expression.Name("set_by").Equal(expression.Value(it.SetBy)).
				And(expression.Name("execution_arn").Equal(expression.Value(it.ExecutionARN)))))
	}
	expr, err := b.Build()
	if err != nil {
		return 0, fmt.Errorf("put credential: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: credentialKey(it.Target, it.Scope),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return 0, fmt.Errorf("put credential of %s target %s (%s scope): %w", it.Target.ToolsetName, it.Target.Name, it.Scope.Kind(), ErrSetByAnother)
	}
	if err != nil {
		return 0, fmt.Errorf("put credential of %s target %s (%s scope): %w", it.Target.ToolsetName, it.Target.Name, it.Scope.Kind(), err)
	}
	var got struct {
		Version int64 `dynamodbav:"version"`
	}
	if err := attributevalue.UnmarshalMap(out.Attributes, &got); err != nil || got.Version < 1 {
		return 0, fmt.Errorf("put credential of %s target %s: no version came back", it.Target.ToolsetName, it.Target.Name)
	}
	return got.Version, nil
}

// Delete revokes t's credential in scope s: it deletes the item. A key
// with no item is ErrNotFound.
func (s *Store) Delete(ctx context.Context, t credential.Target, sc credential.Scope) error {
	if err := checkKeyParts(t); err != nil {
		return fmt.Errorf("revoke credential: %w", err)
	}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: credentialKey(t, sc),
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("revoke credential of %s target %s (%s scope): %w", t.ToolsetName, t.Name, sc.Kind(), ErrNotFound)
	case err != nil:
		return fmt.Errorf("revoke credential of %s target %s (%s scope): %w", t.ToolsetName, t.Name, sc.Kind(), err)
	}
	return nil
}

// listAttributes are what List and Origins read: no ct, nonce or edk.
var listAttributes = append(table.Credential.Names(table.PK, table.SK, "key_id", "version", "created_at", "set_by",
	"credential_expires_at", "execution_arn"), table.CredentialToolset.Names("registered_at", "allowed_by", "allowed_at")...)

// query reads every item of toolsetName's partition whose sort key starts
// with skPrefix ("" for all), projecting listAttributes, consistently.
func (s *Store) query(ctx context.Context, toolsetName, skPrefix string) (Listing, error) {
	names := map[string]string{}
	var proj []string
	for i, n := range listAttributes {
		ph := fmt.Sprintf("#a%d", i)
		names[ph] = n
		proj = append(proj, ph)
	}
	names["#pk"] = table.PK
	cond := "#pk = :pk"
	values := map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: table.Credential.Key(toolsetName)}}
	if skPrefix != "" {
		cond += " AND begins_with(#sk, :sk)"
		names["#sk"] = table.SK
		values[":sk"] = &types.AttributeValueMemberS{Value: skPrefix}
	}
	var l Listing
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: aws.String(cond), ProjectionExpression: aws.String(strings.Join(proj, ", ")),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values, ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return Listing{}, fmt.Errorf("list credentials of %s: %w", toolsetName, err)
		}
		for _, raw := range out.Items {
			if err := l.add(raw); err != nil {
				return Listing{}, fmt.Errorf("list credentials of %s: %w", toolsetName, err)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return l, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// add adds one item read by query to l.
func (l *Listing) add(raw map[string]types.AttributeValue) error {
	var sk string
	if v, ok := raw[table.SK].(*types.AttributeValueMemberS); ok {
		sk = v.Value
	}
	target, origin, infix, rest, ok := splitSK(sk)
	if !ok {
		return fmt.Errorf("an item's sort key %q is neither a credential's nor a marker's", sk)
	}
	if infix == table.CredentialToolsetInfix {
		var m markerItem
		if err := attributevalue.UnmarshalMap(raw, &m); err != nil {
			return err
		}
		l.Markers = append(l.Markers, Marker{Target: target, Origin: origin, ToolsetID: rest,
			RegisteredAt: parseStamp(m.RegisteredAt), AllowedBy: m.AllowedBy, AllowedAt: parseStamp(m.AllowedAt)})
		return nil
	}
	var c credentialItem
	if err := attributevalue.UnmarshalMap(raw, &c); err != nil {
		return err
	}
	md := Metadata{Target: target, Origin: origin, Scope: credential.Scope(rest), Version: c.Version, CreatedAt: parseStamp(c.CreatedAt),
		SetBy: c.SetBy, ExecutionARN: c.ExecutionARN, KeyID: c.KeyID}
	if c.CredentialExpiresAt != 0 {
		md.ExpiresAt = time.Unix(c.CredentialExpiresAt, 0).UTC()
	}
	l.Credentials = append(l.Credentials, md)
	return nil
}

// splitSK splits a credential or marker sort key into its target, origin,
// infix (table.CredentialScopeInfix or table.CredentialToolsetInfix) and
// what follows it (a scope or a toolset id).
func splitSK(sk string) (target, origin, infix, rest string, ok bool) {
	target, after, ok := strings.Cut(sk, "#")
	if !ok {
		return "", "", "", "", false
	}
	after = "#" + after
	for _, in := range []string{table.CredentialScopeInfix, table.CredentialToolsetInfix} {
		if i := strings.Index(after, in); i > 0 {
			return target, after[1:i], in, after[i+len(in):], true
		}
	}
	return "", "", "", "", false
}

// List returns toolsetName's credentials (metadata only: never a
// ciphertext nor an encrypted data key) and toolset markers, in sort key
// order (target, origin, then credentials before markers).
func (s *Store) List(ctx context.Context, toolsetName string) (Listing, error) {
	return s.query(ctx, toolsetName, "")
}

// MarkToolset records that toolsetID, registered under t.ToolsetName,
// pins target t at t.Origin (registered_at now). A marker already there is
// left as it is (allowed or not).
func (s *Store) MarkToolset(ctx context.Context, t credential.Target, toolsetID string) error {
	if err := checkKeyParts(t); err != nil || toolsetID == "" {
		return fmt.Errorf("mark toolset %s: %w", toolsetID, errors.Join(err, errIf(toolsetID == "", "empty toolset id")))
	}
	k := markerKey(t, toolsetID)
	item := map[string]types.AttributeValue{table.PK: k[table.PK], table.SK: k[table.SK],
		"registered_at": &types.AttributeValueMemberS{Value: stamp(s.now())}}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("mark toolset %s for %s target %s: %w", toolsetID, t.ToolsetName, t.Name, err)
	}
	return nil
}

func errIf(cond bool, msg string) error {
	if cond {
		return errors.New(msg)
	}
	return nil
}

// Allow lets toolsetID use t's credentials at t.Origin: it sets the
// marker's allowed_by (by, a verified ARN) and allowed_at. A toolset id
// with no marker (not registered under the name with that target and
// origin) is ErrNotFound.
func (s *Store) Allow(ctx context.Context, t credential.Target, toolsetID, by string) error {
	if err := checkKeyParts(t); err != nil {
		return fmt.Errorf("allow toolset %s: %w", toolsetID, err)
	}
	if by == "" {
		return fmt.Errorf("allow toolset %s: no principal", toolsetID)
	}
	u := expression.Set(expression.Name("allowed_by"), expression.Value(by)).
		Set(expression.Name("allowed_at"), expression.Value(stamp(s.now())))
	expr, err := expression.NewBuilder().WithUpdate(u).
		WithCondition(expression.AttributeExists(expression.Name(table.PK))).Build()
	if err != nil {
		return fmt.Errorf("allow toolset %s: %w", toolsetID, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: markerKey(t, toolsetID),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("allow toolset %s for %s target %s at %s: it is not registered there: %w", toolsetID, t.ToolsetName, t.Name, t.Origin, ErrNotFound)
	case err != nil:
		return fmt.Errorf("allow toolset %s for %s target %s: %w", toolsetID, t.ToolsetName, t.Name, err)
	}
	return nil
}

// AllowRegistered allows (Allow) every toolset id with a marker for t at
// t.Origin at this moment, as credentials set does, and returns their ids
// in sort key order. Ids already allowed are allowed again (by, now).
func (s *Store) AllowRegistered(ctx context.Context, t credential.Target, by string) ([]string, error) {
	if err := checkKeyParts(t); err != nil {
		return nil, fmt.Errorf("allow registered toolsets: %w", err)
	}
	l, err := s.query(ctx, t.ToolsetName, table.CredentialTargetSKPrefix(t.Name)+t.Origin+table.CredentialToolsetInfix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range l.Markers {
		if err := s.Allow(ctx, t, m.ToolsetID, by); err != nil {
			return ids, err
		}
		ids = append(ids, m.ToolsetID)
	}
	return ids, nil
}

// Origin is one origin a target has items at, as Origins reports it.
type Origin struct {
	Origin string
	// LastRegistered is the latest registered_at of the origin's toolset
	// markers; zero when it has credentials only.
	LastRegistered time.Time
	// ToolsetIDs are the ids of its markers; Scopes, its credentials'.
	ToolsetIDs []string
	Scopes     []credential.Scope
}

// Origins returns the origins target has items at under toolsetName (one
// Query, begins_with(sk, "<target>#")), the most recently registered
// first (credentials set uses the first: docs/credentials.md, "Setting a
// credential"), then by origin.
func (s *Store) Origins(ctx context.Context, toolsetName, target string) ([]Origin, error) {
	if target == "" || strings.Contains(target, "#") {
		return nil, fmt.Errorf("origins: target %q is empty or holds a #", target)
	}
	l, err := s.query(ctx, toolsetName, table.CredentialTargetSKPrefix(target))
	if err != nil {
		return nil, err
	}
	by := map[string]*Origin{}
	get := func(o string) *Origin {
		if by[o] == nil {
			by[o] = &Origin{Origin: o}
		}
		return by[o]
	}
	for _, m := range l.Markers {
		o := get(m.Origin)
		o.ToolsetIDs = append(o.ToolsetIDs, m.ToolsetID)
		if m.RegisteredAt.After(o.LastRegistered) {
			o.LastRegistered = m.RegisteredAt
		}
	}
	for _, c := range l.Credentials {
		o := get(c.Origin)
		o.Scopes = append(o.Scopes, c.Scope)
	}
	var out []Origin
	for _, o := range by {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b Origin) int {
		if c := b.LastRegistered.Compare(a.LastRegistered); c != 0 {
			return c
		}
		return strings.Compare(a.Origin, b.Origin)
	})
	return out, nil
}

// stored is a credential item as Lookup reads it.
type stored struct {
	Scope        credential.Scope
	Sealed       Sealed
	Version      int64
	SetBy        string
	ExpiresAt    time.Time // zero: none
	ExecutionARN string
}

// Found is what Lookup read for one call: the credential of each scope
// asked for that has one (nil where none), and the toolset id's marker.
type Found struct {
	Run, EndUser, Toolset *stored
	// Marked reports the toolset id's marker exists; Allowed, that it
	// has allowed_by.
	Marked, Allowed bool
}

// maxBatchRounds bounds Lookup's BatchGetItem requests: DynamoDB may
// return some keys unprocessed (throttling), to be asked again.
const maxBatchRounds = 4

// Lookup reads, in ONE consistent BatchGetItem (more only for keys
// DynamoDB returns unprocessed), the credentials of t at t.Origin in the
// run scope run (when not ""), the end-user scope endUser (when not "")
// and the toolset scope, and the marker of toolsetID, projecting
// table.CredentialReadAttributes.
func (s *Store) Lookup(ctx context.Context, t credential.Target, toolsetID string, run, endUser credential.Scope) (Found, error) {
	if err := checkKeyParts(t); err != nil {
		return Found{}, fmt.Errorf("look up credentials: %w", err)
	}
	keys := []map[string]types.AttributeValue{credentialKey(t, credential.ScopeToolset), markerKey(t, toolsetID)}
	if run != "" {
		keys = append(keys, credentialKey(t, run))
	}
	if endUser != "" {
		keys = append(keys, credentialKey(t, endUser))
	}
	var names []expression.NameBuilder
	for _, n := range table.CredentialReadAttributes {
		names = append(names, expression.Name(n))
	}
	proj, err := expression.NewBuilder().WithProjection(expression.NamesList(names[0], names[1:]...)).Build()
	if err != nil {
		return Found{}, err
	}
	req := map[string]types.KeysAndAttributes{s.table: {
		Keys: keys, ConsistentRead: aws.Bool(true),
		ProjectionExpression: proj.Projection(), ExpressionAttributeNames: proj.Names(),
	}}
	var f Found
	for round := 0; len(req) > 0; round++ {
		if round == maxBatchRounds {
			return Found{}, fmt.Errorf("look up credentials of %s target %s: keys still unprocessed after %d requests", t.ToolsetName, t.Name, maxBatchRounds)
		}
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return Found{}, fmt.Errorf("look up credentials of %s target %s: %w", t.ToolsetName, t.Name, err)
		}
		for _, raw := range out.Responses[s.table] {
			if err := f.add(raw, t, run, endUser); err != nil {
				return Found{}, fmt.Errorf("look up credentials of %s target %s: %w", t.ToolsetName, t.Name, err)
			}
		}
		req = out.UnprocessedKeys
	}
	return f, nil
}

// add places one item Lookup read.
func (f *Found) add(raw map[string]types.AttributeValue, t credential.Target, run, endUser credential.Scope) error {
	var c credentialItem
	var m markerItem
	if err := attributevalue.UnmarshalMap(raw, &c); err != nil {
		return err
	}
	if err := attributevalue.UnmarshalMap(raw, &m); err != nil {
		return err
	}
	target, origin, infix, rest, ok := splitSK(c.SK)
	if !ok || target != t.Name || origin != t.Origin {
		return fmt.Errorf("an item's sort key %q is not one asked for", c.SK)
	}
	if infix == table.CredentialToolsetInfix {
		f.Marked, f.Allowed = true, m.AllowedBy != ""
		return nil
	}
	st := &stored{Scope: credential.Scope(rest), Sealed: Sealed{Ciphertext: c.CT, Nonce: c.Nonce, EncryptedKey: c.EDK, KeyID: c.KeyID},
		Version: c.Version, SetBy: c.SetBy, ExecutionARN: c.ExecutionARN}
	if c.CredentialExpiresAt != 0 {
		st.ExpiresAt = time.Unix(c.CredentialExpiresAt, 0).UTC()
	}
	switch st.Scope {
	case credential.ScopeToolset:
		f.Toolset = st
	case run:
		f.Run = st
	case endUser:
		f.EndUser = st
	default:
		return fmt.Errorf("an item's sort key %q is not one asked for", c.SK)
	}
	return nil
}

// executionName is the name of the execution runID names (the last
// ":"-separated part of an execution ARN), or "" when runID is not an
// execution ARN (a direct-lane run id, "direct/...").
func executionName(runID string) string {
	if !strings.HasPrefix(runID, "arn:") || !strings.Contains(runID, ":execution:") {
		return ""
	}
	return runID[strings.LastIndex(runID, ":")+1:]
}

// RunStart reports whether the run executionARN has a start record
// (table.Start), and its verified starter: once it has one, its run scope
// is sealed and credentials set --run is refused, but for the run's
// starter while the run waits for that credential (docs/credentials.md,
// "Run credentials"). One consistent GetItem projecting the record's keys
// and starter.
func (s *Store) RunStart(ctx context.Context, executionARN string) (starter string, started bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(table.Start.Key(executionARN), table.Start.SKValue),
		ProjectionExpression:     aws.String("#pk, #sk, #starter"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK, "#sk": table.SK, "#starter": "starter"},
		ConsistentRead:           aws.Bool(true),
	})
	if err != nil {
		return "", false, fmt.Errorf("read the start record of %s: %w", executionARN, err)
	}
	if len(out.Item) == 0 {
		return "", false, nil
	}
	if v, ok := out.Item["starter"].(*types.AttributeValueMemberS); ok {
		starter = v.Value
	}
	return starter, true, nil
}

// ToolsetCredential reads t's toolset-scope credential for the publish
// function's listing of a server at registration, whatever toolset ids
// are allowed (one consistent
// GetItem projecting ct, nonce, edk, key_id and credential_expires_at):
// its sealed value, its expiry (zero: none), and whether there is one.
func (s *Store) ToolsetCredential(ctx context.Context, t credential.Target) (Sealed, time.Time, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			table.PK: &types.AttributeValueMemberS{Value: table.Credential.Key(t.ToolsetName)},
			table.SK: &types.AttributeValueMemberS{Value: table.CredentialSK(t.Name, t.Origin, string(credential.ScopeToolset))},
		},
		ProjectionExpression:     aws.String("#ct, #nonce, #edk, #key, #exp"),
		ExpressionAttributeNames: map[string]string{"#ct": "ct", "#nonce": "nonce", "#edk": "edk", "#key": "key_id", "#exp": "credential_expires_at"},
	})
	if err != nil {
		return Sealed{}, time.Time{}, false, fmt.Errorf("read the toolset credential of %s target %s: %w", t.ToolsetName, t.Name, err)
	}
	if len(out.Item) == 0 {
		return Sealed{}, time.Time{}, false, nil
	}
	var it struct {
		CT      []byte `dynamodbav:"ct"`
		Nonce   []byte `dynamodbav:"nonce"`
		EDK     []byte `dynamodbav:"edk"`
		KeyID   string `dynamodbav:"key_id"`
		Expires int64  `dynamodbav:"credential_expires_at"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Sealed{}, time.Time{}, false, fmt.Errorf("read the toolset credential of %s target %s: %w", t.ToolsetName, t.Name, err)
	}
	var expires time.Time
	if it.Expires != 0 {
		expires = time.Unix(it.Expires, 0).UTC()
	}
	return Sealed{Ciphertext: it.CT, Nonce: it.Nonce, EncryptedKey: it.EDK, KeyID: it.KeyID}, expires, true, nil
}
