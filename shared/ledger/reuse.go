package ledger

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// OptionsDigestBytes is the length of an options digest (Record.Options):
// the first 16 bytes of a SHA-256.
const OptionsDigestBytes = 16

// CallOptions are what a call's result depends on besides its tool,
// toolset and input: the step's keep and output_limit_bytes
// (tool.Envelope) and the credential it presents, by scope and target —
// never the secret (docs/fork.md, "Matching").
type CallOptions struct {
	// Keep is the envelope's keep list, in its order; nil: the whole
	// result.
	Keep []string `json:"keep,omitempty"`
	// OutputLimitBytes is the envelope's output_limit_bytes; 0: none.
	OutputLimitBytes int `json:"output_limit_bytes,omitempty"`
	// Scope is the credential the call presents; nil: none.
	Scope *CallScope `json:"scope,omitempty"`
	// Edited is the digest (tool.InputDigest) of the input the tool runs
	// with when the call's approval has edits (docs/reviews.md, "Approve
	// with edits"): the sent input's digest stays the record's, so this
	// keeps a key from running another input, and a fork from reusing
	// an edited call for one approved without the edits; "": none.
	Edited string `json:"edited,omitempty"`
}

// CallScope is a presented credential's scope and target, as the vault
// names them (shared/credential): Kind is credential.Scope.Kind (toolset,
// end_user or run); EndUser the end-user scope itself ("end_user:" and a
// keyed hash, never the raw id) for an end_user credential, so that a
// fork reuses a call made for one end user only for the same one; Target
// and Origin the target's name and origin.
type CallScope struct {
	Kind    string `json:"kind"`
	EndUser string `json:"end_user,omitempty"`
	Target  string `json:"target"`
	Origin  string `json:"origin"`
}

// OptionsDigest is o's options digest: the first OptionsDigestBytes of the
// SHA-256 of the RFC 8785 form of the JSON object {keep,
// output_limit_bytes, scope, edited} (members absent when unset); nil when none
// is set, so that the claim of a plain call writes no more bytes than
// before (docs/ledger.md, "The call item on the wire").
func OptionsDigest(o CallOptions) ([]byte, error) {
	if len(o.Keep) == 0 && o.OutputLimitBytes == 0 && o.Scope == nil && o.Edited == "" {
		return nil, nil
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("options digest: %w", err)
	}
	_, digest, err := tool.InputDigest(raw)
	if err != nil {
		return nil, fmt.Errorf("options digest: %w", err)
	}
	sum, err := hex.DecodeString(strings.TrimPrefix(digest, digestPrefix))
	if err != nil {
		return nil, fmt.Errorf("options digest: %w", err)
	}
	return sum[:OptionsDigestBytes], nil
}

// Filter of ParentCalls: a call item's step and input digest (table.Call
// c.s, c.d). Row items have no c, so the filter drops them.
const parentCallsFilter = "c.s=:s AND c.d=:d"

// ParentCalls returns the seqs of run runID's calls of step whose input
// digest is digest ("sha256:<hex>"), in call order: one Query of the
// run's partition, begins_with(sk, CALL#), FilterExpression on c.s and
// c.d, projecting the keys only (never a result), followed through every
// page (table access Calls; docs/fork.md, "Matching"). A call
// item of the previous layout (LayoutNamed) has no c and is not found:
// a fork of a run that old runs its calls.
func (s *Store) ParentCalls(ctx context.Context, runID, step, digest string) ([]tool.Seq, error) {
	d, err := hexBytes(digest, digestPrefix, 32)
	if err != nil {
		return nil, fmt.Errorf("parent calls: input digest: %w", err)
	}
	var seqs []tool.Seq
	var start map[string]types.AttributeValue
	for {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(s.table),
			KeyConditionExpression: aws.String("pk=:pk AND begins_with(sk,:prefix)"),
			FilterExpression:       aws.String(parentCallsFilter),
			ProjectionExpression:   aws.String("pk,sk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(table.Call.Key(runID)), ":prefix": str(table.Call.SKPrefix), ":s": str(step), ":d": bytesAttr(d),
			},
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("parent calls of %s: %w", runID, err)
		}
		for _, it := range out.Items {
			seq, err := seqOfItem(it)
			if err != nil || getS(it, AttrSK) != callSK(seq) {
				continue // a row item's key, which the filter should have dropped
			}
			seqs = append(seqs, seq)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	// Sort keys order calls as they were made (tool.Seq SortKey); a page
	// keeps that order, and so does following the pages.
	slices.SortStableFunc(seqs, func(a, b tool.Seq) int { return strings.Compare(a.SortKey(), b.SortKey()) })
	return seqs, nil
}

// ClaimReuse takes parent call parentSeq of a fork's parent run for the
// fork's call forkKey ("<fork run id>/<seq>"), with one conditional
// PutItem of the reuse claim (table.ReuseClaim: pk RUN#<fork run id>, sk
// REUSE#<the parent call's sort key>; condition attribute_not_exists(pk)
// OR claimed_by = :k), sealed with the store's key over the fork run, the
// parent call's sort key and forkKey (seal.ReuseClaim): true when the
// claim is forkKey's, taken now or before (an attempt sent again, a
// request the SDK sent twice), false when another call of the fork holds
// it (docs/fork.md, "Matching").
//
// A claim held by another key is read (one consistent GetItem, only
// then) and its seal checked: every tool role may put a reuse claim, so
// one this function did not seal (absent or forged) is an error wrapping
// ErrForged, never a claim another call holds, which would make the
// fork's call send again what its parent sent (docs/fork.md, "The reuse
// claim"). A store without a key seals and checks nothing.
func (s *Store) ClaimReuse(ctx context.Context, forkKey string, parentSeq tool.Seq) (bool, error) {
	forkRun, _, err := splitKey(forkKey)
	if err != nil {
		return false, err
	}
	if parentSeq.Valid() != nil {
		return false, fmt.Errorf("claim parent call %q: not a seq", parentSeq)
	}
	pk, sk := table.ReuseClaim.Key(forkRun), table.ReuseSK(callSK(parentSeq))
	item := map[string]types.AttributeValue{
		AttrPK: str(pk), AttrSK: str(sk), "claimed_by": str(forkKey), AttrExpiresAt: s.expires(),
	}
	if s.mac.Valid() {
		item[AttrMAC] = str(s.mac.Sum(seal.ReuseClaim, forkRun, sk, forkKey))
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR claimed_by=:k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": str(forkKey)},
	})
	if IsConditionFailed(err) {
		return false, s.checkReuseClaim(ctx, forkRun, pk, sk)
	}
	if err != nil {
		return false, fmt.Errorf("claim parent call %s for %s: %w", parentSeq, forkKey, err)
	}
	return true, nil
}

// checkReuseClaim reads the reuse claim pk/sk that another key holds and
// checks its seal: nil when this function sealed it for its holder, an
// error wrapping ErrForged when not (or when it names no holder).
func (s *Store) checkReuseClaim(ctx context.Context, forkRun, pk, sk string) error {
	if !s.mac.Valid() {
		return nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{AttrPK: str(pk), AttrSK: str(sk)},
	})
	if err != nil {
		return fmt.Errorf("read the reuse claim %s of %s: %w", sk, forkRun, err)
	}
	holder, mac := getS(out.Item, "claimed_by"), getS(out.Item, AttrMAC)
	if holder == "" || s.mac.Check(mac, seal.ReuseClaim, forkRun, sk, holder) != seal.Valid {
		return fmt.Errorf("the reuse claim %s of %s: %w", sk, forkRun, ErrForged)
	}
	return nil
}
