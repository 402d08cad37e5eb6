package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/table"
)

// Source is an inbound source as stored: how its deliveries are verified
// and what each one runs.
type Source struct {
	// Name is the source's name (inbound.CheckName).
	Name string
	// Scheme is how its deliveries are signed (inbound.ParseScheme).
	Scheme string
	// Solution is the Solution each event starts a run of.
	Solution string
	// EndUser, when set, is the end-user id the runs act for.
	EndUser string
	// AddedBy is the verified adder's ARN.
	AddedBy string
	// SecretHolders are the principal ARNs who held one of its secrets,
	// newest last: the adder (answered the secret drawn, or who gave it),
	// then each rotator (HeldBy), the newest MaxSecretHolders. Four eyes
	// refuse each as an approver of the source's runs (docs/identity.md,
	// "Four eyes"). PutSource takes none as [AddedBy]; an item written
	// before secret_holders existed reads as [AddedBy].
	SecretHolders []string
	// MaxBodyBytes bounds a delivery's body: 1 to inboundapi.MaxBodyBytes;
	// PutSource takes 0 as inboundapi.DefaultMaxBodyBytes.
	MaxBodyBytes int
	// Secrets are the verification secrets, sealed (SealSecret), the
	// current one (RetiresAt zero) last.
	Secrets []Secret
	// AddedAt and UpdatedAt are whole seconds, UTC; PutSource stamps them
	// when zero.
	AddedAt, UpdatedAt time.Time
	// Version is 1 at PutSource, then one more at each UpdateSecrets.
	Version int
}

// Secret is one verification secret as stored: sealed, when it was
// created, and when it stops verifying (zero: it is the current one).
type Secret struct {
	Sealed    vault.Sealed
	CreatedAt time.Time
	// RetiresAt is when a rotated-out secret stops verifying; zero:
	// current.
	RetiresAt time.Time
}

// Verifying returns the secrets that still verify at now: the current one
// and every rotated-out one whose RetiresAt is after now, in stored
// order.
func (src Source) Verifying(now time.Time) []Secret {
	var out []Secret
	for _, sec := range src.Secrets {
		if sec.RetiresAt.IsZero() || sec.RetiresAt.After(now) {
			out = append(out, sec)
		}
	}
	return out
}

// sourceItem is a table.InboundSource item as written and read.
type sourceItem struct {
	PK           string       `dynamodbav:"pk"`
	SK           string       `dynamodbav:"sk"`
	Scheme       string       `dynamodbav:"scheme,omitempty"`
	Solution     string       `dynamodbav:"solution,omitempty"`
	MaxBodyBytes int          `dynamodbav:"max_body_bytes,omitempty"`
	EndUser      string       `dynamodbav:"end_user,omitempty"`
	Secrets      []secretItem `dynamodbav:"secrets,omitempty"`
	AddedBy      string       `dynamodbav:"added_by,omitempty"`
	Holders      []string     `dynamodbav:"secret_holders,omitempty"`
	AddedAt      string       `dynamodbav:"added_at,omitempty"`
	UpdatedAt    string       `dynamodbav:"updated_at,omitempty"`
	Version      int          `dynamodbav:"version,omitempty"`
}

// secretItem is one member of a source's secrets list.
type secretItem struct {
	CT        []byte `dynamodbav:"ct"`
	Nonce     []byte `dynamodbav:"nonce"`
	EDK       []byte `dynamodbav:"edk"`
	KeyID     string `dynamodbav:"key_id"`
	CreatedAt string `dynamodbav:"created_at"`
	RetiresAt string `dynamodbav:"retires_at,omitempty"`
}

func secretItems(secrets []Secret) []secretItem {
	out := make([]secretItem, len(secrets))
	for i, sec := range secrets {
		out[i] = secretItem{CT: sec.Sealed.Ciphertext, Nonce: sec.Sealed.Nonce, EDK: sec.Sealed.EncryptedKey, KeyID: sec.Sealed.KeyID,
			CreatedAt: stamp(sec.CreatedAt)}
		if !sec.RetiresAt.IsZero() {
			out[i].RetiresAt = stamp(sec.RetiresAt)
		}
	}
	return out
}

func (it sourceItem) source() (Source, error) {
	name, ok := strings.CutPrefix(it.SK, table.InboundSourceSKPrefix)
	if !ok || it.PK != table.InboundSourcesPK() {
		return Source{}, fmt.Errorf("item %s/%s is not an inbound source", it.PK, it.SK)
	}
	src := Source{Name: name, Scheme: it.Scheme, Solution: it.Solution, EndUser: it.EndUser, AddedBy: it.AddedBy,
		MaxBodyBytes: it.MaxBodyBytes, AddedAt: parseStamp(it.AddedAt), UpdatedAt: parseStamp(it.UpdatedAt), Version: it.Version,
		SecretHolders: it.Holders}
	if len(src.SecretHolders) == 0 && it.AddedBy != "" {
		src.SecretHolders = []string{it.AddedBy}
	}
	for _, sec := range it.Secrets {
		src.Secrets = append(src.Secrets, Secret{
			Sealed:    vault.Sealed{Ciphertext: sec.CT, Nonce: sec.Nonce, EncryptedKey: sec.EDK, KeyID: sec.KeyID},
			CreatedAt: parseStamp(sec.CreatedAt), RetiresAt: parseStamp(sec.RetiresAt),
		})
	}
	return src, nil
}

// MaxSecretHolders bounds a source's secret_holders: the newest 16, as
// many as a start request's origin may name (review.MaxOriginHolders). A holder
// pushed out by 16 later rotators is no longer refused as an approver of
// the source's runs; by then the secret it held has long been rotated
// out.
const MaxSecretHolders = 16

// HeldBy is holders with who added as the newest holder: who moved last
// when it is listed already, the oldest dropped beyond MaxSecretHolders.
// holders is not changed.
func HeldBy(holders []string, who string) []string {
	out := make([]string, 0, len(holders)+1)
	for _, h := range holders {
		if h != who {
			out = append(out, h)
		}
	}
	out = append(out, who)
	if len(out) > MaxSecretHolders {
		out = out[len(out)-MaxSecretHolders:]
	}
	return out
}

func sourceKey(name string) map[string]types.AttributeValue {
	return key(table.InboundSourcesPK(), table.InboundSourceSK(name))
}

// checkSecrets refuses a secrets list that could not verify: none, a
// retiring one last (the current one must be last, and alone current),
// or a seal that could not open.
func checkSecrets(secrets []Secret) error {
	if len(secrets) == 0 || !secrets[len(secrets)-1].RetiresAt.IsZero() {
		return fmt.Errorf("secrets: the last must be the current one (no retires_at): %w", ErrInvalid)
	}
	for i, sec := range secrets {
		if i < len(secrets)-1 && sec.RetiresAt.IsZero() {
			return fmt.Errorf("secrets: only the last may be current (no retires_at): %w", ErrInvalid)
		}
		if len(sec.Sealed.Ciphertext) == 0 || len(sec.Sealed.Nonce) == 0 || len(sec.Sealed.EncryptedKey) == 0 || sec.Sealed.KeyID == "" {
			return fmt.Errorf("secrets: a sealed secret is incomplete: %w", ErrInvalid)
		}
	}
	return nil
}

// checkName refuses a source's or schedule's name that breaks
// inbound.CheckName, before it reaches a key.
func checkName(what, name string) error {
	if err := inbound.CheckName(name); err != nil {
		return fmt.Errorf("%s %w: %w", what, err, ErrInvalid)
	}
	return nil
}

// PutSource stores src as a new source: one PutItem conditional on
// attribute_not_exists(pk), so a name already taken is ErrExists and the
// first source stays as it was. src needs a name (inbound.CheckName), a
// known scheme (inbound.ParseScheme), a Solution, an adder, MaxBodyBytes 0
// to inboundapi.MaxBodyBytes, and exactly one current secret, its last.
// Zero fields take their defaults: MaxBodyBytes
// inboundapi.DefaultMaxBodyBytes, AddedAt now, UpdatedAt AddedAt, Version
// 1, a secret's CreatedAt AddedAt.
func (st *Store) PutSource(ctx context.Context, src Source) error {
	if err := checkName("source", src.Name); err != nil {
		return fmt.Errorf("put source: %w", err)
	}
	if _, err := inbound.ParseScheme(src.Scheme); err != nil {
		return fmt.Errorf("put source %s: scheme %w: %w", src.Name, err, ErrInvalid)
	}
	switch {
	case src.Solution == "":
		return fmt.Errorf("put source %s: no solution: %w", src.Name, ErrInvalid)
	case src.AddedBy == "":
		return fmt.Errorf("put source %s: no added_by: %w", src.Name, ErrInvalid)
	case src.MaxBodyBytes < 0 || src.MaxBodyBytes > inboundapi.MaxBodyBytes:
		return fmt.Errorf("put source %s: max_body_bytes must be 1 to %d: %w", src.Name, inboundapi.MaxBodyBytes, ErrInvalid)
	}
	if err := checkSecrets(src.Secrets); err != nil {
		return fmt.Errorf("put source %s: %w", src.Name, err)
	}
	if src.MaxBodyBytes == 0 {
		src.MaxBodyBytes = inboundapi.DefaultMaxBodyBytes
	}
	if src.AddedAt.IsZero() {
		src.AddedAt = time.Now()
	}
	if src.UpdatedAt.IsZero() {
		src.UpdatedAt = src.AddedAt
	}
	if src.Version == 0 {
		src.Version = 1
	}
	if len(src.SecretHolders) == 0 {
		src.SecretHolders = []string{src.AddedBy}
	}
	if len(src.SecretHolders) > MaxSecretHolders {
		return fmt.Errorf("put source %s: secret_holders must list at most %d principals: %w", src.Name, MaxSecretHolders, ErrInvalid)
	}
	secrets := append([]Secret(nil), src.Secrets...)
	for i := range secrets {
		if secrets[i].CreatedAt.IsZero() {
			secrets[i].CreatedAt = src.AddedAt
		}
	}
	item, err := attributevalue.MarshalMap(sourceItem{Holders: src.SecretHolders,
		PK: table.InboundSourcesPK(), SK: table.InboundSourceSK(src.Name), Scheme: src.Scheme, Solution: src.Solution,
		MaxBodyBytes: src.MaxBodyBytes, EndUser: src.EndUser, Secrets: secretItems(secrets), AddedBy: src.AddedBy,
		AddedAt: stamp(src.AddedAt), UpdatedAt: stamp(src.UpdatedAt), Version: src.Version,
	})
	if err != nil {
		return fmt.Errorf("put source %s: %w", src.Name, err)
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": table.PK},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("put source %s: %w", src.Name, ErrExists)
	case err != nil:
		return fmt.Errorf("put source %s: %w", src.Name, err)
	}
	return nil
}

// getSource is a consistent GetItem of source name, projecting names when
// any are given (table.Kind.Names), the whole item otherwise.
func (st *Store) getSource(ctx context.Context, name string, names []string) (Source, error) {
	if err := checkName("source", name); err != nil {
		return Source{}, err
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(st.table), Key: sourceKey(name), ConsistentRead: aws.Bool(true)}
	if len(names) > 0 {
		in.ProjectionExpression, in.ExpressionAttributeNames = projection(names)
	}
	out, err := st.db.GetItem(ctx, in)
	if err != nil {
		return Source{}, err
	}
	if len(out.Item) == 0 {
		return Source{}, fmt.Errorf("source %s: %w", name, ErrNotFound)
	}
	var it sourceItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Source{}, fmt.Errorf("source %s: %w", name, err)
	}
	return it.source()
}

// projection is a ProjectionExpression of names, each through a
// placeholder (several are DynamoDB reserved words: status, name).
func projection(names []string) (*string, map[string]string) {
	ph := make([]string, len(names))
	m := make(map[string]string, len(names))
	for i, n := range names {
		ph[i] = fmt.Sprintf("#p%d", i)
		m[ph[i]] = n
	}
	return aws.String(strings.Join(ph, ", ")), m
}

// Source reads source name whole (the sources function): a consistent
// GetItem; ErrNotFound when there is none.
func (st *Store) Source(ctx context.Context, name string) (Source, error) {
	src, err := st.getSource(ctx, name, nil)
	if err != nil {
		return Source{}, fmt.Errorf("read source: %w", err)
	}
	return src, nil
}

// SourceSecrets reads what webhook-receiver needs of source name to
// verify a delivery: its scheme, secrets and max_body_bytes
// (table.InboundSourceVerifyAttributes), never its Solution nor end user;
// ErrNotFound when there is none.
func (st *Store) SourceSecrets(ctx context.Context, name string) (Source, error) {
	src, err := st.getSource(ctx, name, table.InboundSourceVerifyAttributes)
	if err != nil {
		return Source{}, fmt.Errorf("read source secrets: %w", err)
	}
	return src, nil
}

// SourceRun reads what inbound-start needs of source name to start an
// event's run: its Solution, end user, adder, AddedAt and scheme
// (table.InboundSourceRunAttributes), never its secrets; ErrNotFound when
// there is none.
func (st *Store) SourceRun(ctx context.Context, name string) (Source, error) {
	src, err := st.getSource(ctx, name, table.InboundSourceRunAttributes)
	if err != nil {
		return Source{}, fmt.Errorf("read source: %w", err)
	}
	return src, nil
}

// Sources lists every source in name order: a Query of their one
// partition, page after page.
func (st *Store) Sources(ctx context.Context) ([]Source, error) {
	out, err := listPartition(ctx, st, table.InboundSourcesPK(), sourceItem.source)
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	return out, nil
}

// listPartition reads every item of partition pk in sort key order
// (queryPartition), each as an I turned into a T by conv.
func listPartition[I, T any](ctx context.Context, st *Store, pk string, conv func(I) (T, error)) ([]T, error) {
	var out []T
	err := st.queryPartition(ctx, pk, func(item map[string]types.AttributeValue) error {
		var it I
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		v, err := conv(it)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// queryPartition reads every item of partition pk, in sort key order.
func (st *Store) queryPartition(ctx context.Context, pk string, each func(map[string]types.AttributeValue) error) error {
	var start map[string]types.AttributeValue
	for {
		out, err := st.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(st.table), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": table.PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(pk)},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			if err := each(item); err != nil {
				return err
			}
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return nil
		}
	}
}

// UpdateSecrets replaces source name's secrets (a rotation: the previous
// current one given a RetiresAt, the new one last; a retirement: the
// current one alone), stamping updated_at now: one UpdateItem adding 1 to
// its version, conditional on version being the one read (ErrConflict
// when another change came between; ErrNotFound when the source is gone).
// secrets must keep the rule PutSource keeps: exactly one current, last.
// The source's secret_holders stay as they are (a retirement hands
// nobody a secret); a rotation is UpdateSecretsHeldBy.
func (st *Store) UpdateSecrets(ctx context.Context, name string, secrets []Secret, version int, now time.Time) error {
	return st.UpdateSecretsHeldBy(ctx, name, secrets, nil, version, now)
}

// UpdateSecretsHeldBy is UpdateSecrets that also sets the source's
// secret_holders to holders (HeldBy of those read and the rotator; 1 to
// MaxSecretHolders), in the same version-conditional UpdateItem, so that
// a new secret is never stored without its holder; nil holders leaves
// them as they are.
func (st *Store) UpdateSecretsHeldBy(ctx context.Context, name string, secrets []Secret, holders []string, version int, now time.Time) error {
	if len(holders) > MaxSecretHolders {
		return fmt.Errorf("update secrets of source %s: secret_holders must list at most %d principals: %w", name, MaxSecretHolders, ErrInvalid)
	}
	if err := checkName("source", name); err != nil {
		return fmt.Errorf("update source secrets: %w", err)
	}
	if err := checkSecrets(secrets); err != nil {
		return fmt.Errorf("update secrets of source %s: %w", name, err)
	}
	secrets = append([]Secret(nil), secrets...)
	for i := range secrets {
		if secrets[i].CreatedAt.IsZero() {
			secrets[i].CreatedAt = now
		}
	}
	list, err := attributevalue.Marshal(secretItems(secrets))
	if err != nil {
		return fmt.Errorf("update secrets of source %s: %w", name, err)
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: sourceKey(name),
		UpdateExpression:         aws.String("SET #secrets = :secrets, #updated = :now ADD #version :one"),
		ConditionExpression:      aws.String("#version = :version"),
		ExpressionAttributeNames: map[string]string{"#secrets": "secrets", "#updated": "updated_at", "#version": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":secrets": list, ":now": s(stamp(now)), ":one": n(1), ":version": n(int64(version)),
		},
	}
	if len(holders) > 0 {
		hl, err := attributevalue.Marshal(holders)
		if err != nil {
			return fmt.Errorf("update secrets of source %s: %w", name, err)
		}
		in.UpdateExpression = aws.String("SET #secrets = :secrets, #updated = :now, #holders = :holders ADD #version :one")
		in.ExpressionAttributeNames["#holders"] = "secret_holders"
		in.ExpressionAttributeValues[":holders"] = hl
	}
	_, err = st.db.UpdateItem(ctx, in)
	if isConditionFailed(err) {
		if _, gerr := st.getSource(ctx, name, table.InboundSource.Names(table.PK, table.SK, "version")); gerr != nil {
			return fmt.Errorf("update source secrets: %w", gerr)
		}
		return fmt.Errorf("update secrets of source %s: version %d: %w", name, version, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("update secrets of source %s: %w", name, err)
	}
	return nil
}

// DeleteSource deletes source name: one DeleteItem conditional on the
// item existing (ErrNotFound). Its events stay until their expires_at.
func (st *Store) DeleteSource(ctx context.Context, name string) error {
	if err := checkName("source", name); err != nil {
		return fmt.Errorf("delete source: %w", err)
	}
	return st.deleteOne(ctx, sourceKey(name), "source "+name)
}

// deleteOne deletes the item of key, conditional on it existing.
func (st *Store) deleteOne(ctx context.Context, k map[string]types.AttributeValue, what string) error {
	_, err := st.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(st.table), Key: k,
		ConditionExpression: aws.String("attribute_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": table.PK},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("delete %s: %w", what, ErrNotFound)
	case err != nil:
		return fmt.Errorf("delete %s: %w", what, err)
	}
	return nil
}
