package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/seal"
)

// claimAttributes are the call's and its first attempt's attributes a
// claim sets with if_not_exists.
var claimAttributes = []string{"run_id", "seq", "step", "tool", "toolset_id", "input_digest", "idempotency_key",
	"state", "attempts", "lease_until", "token", "updated_at", attrAttemptLog, attrExternalKey, attrExternalKeyToken, AttrMAC}

// claimTemplate is the claim's UpdateItem: every claim attribute set if
// not there, the invocation counted, the TTL renewed.
var claimTemplate = claimTemplateOf(claimAttributes)

// claimUnsealedTemplate is claimTemplate without the seal (AttrMAC, the
// last of claimAttributes): a store without a key (the previous layout).
var claimUnsealedTemplate = claimTemplateOf(claimAttributes[:len(claimAttributes)-1])

func claimTemplateOf(attrs []string) template {
	return newTemplate(func() (expression.UpdateBuilder, *expression.ConditionBuilder) {
		cond := claimCondition()
		return claimUpdate(attrs), &cond
	})
}

// claimCondition is the claim's condition: no item yet, or an item whose
// state is one a record can have. An item that exists without one (a
// whole-item PutItem of its key alone, which another tool function's role
// may send, wipes the record) is never claimed afresh, which would run a
// completed call again: the claim fails and Claim reports the record
// forged (docs/ledger.md, "Records are sealed by the function that
// writes them").
func claimCondition() expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(AttrPK)).
		Or(expression.Name("state").In(expression.Value(slot("st_in_progress")), expression.Value(slot("st_completed")),
			expression.Value(slot("st_failed")), expression.Value(slot("st_unknown"))))
}

// claimStates fill claimCondition's slots.
var claimStates = map[string]types.AttributeValue{
	"st_in_progress": str(string(StateInProgress)), "st_completed": str(string(StateCompleted)),
	"st_failed": str(string(StateFailed)), "st_unknown": str(string(StateUnknown)),
}

func claimUpdate(attrs []string) expression.UpdateBuilder {
	u := expression.UpdateBuilder{}
	for _, attr := range attrs {
		u = u.Set(expression.Name(attr), expression.IfNotExists(expression.Name(attr), expression.Value(slot(attr))))
	}
	return u.Set(expression.Name("last_seen_at"), expression.Value(slot("last_seen_at"))).
		Set(expression.Name(AttrExpiresAt), expression.Value(slot(AttrExpiresAt))).
		Add(expression.Name("invocations"), expression.Value(slot("one")))
}

// Claim takes the call's item for a first attempt, or reads it, in one
// UpdateItem: every claim field (r.ExternalKey, required, and the claim's
// token beside it included) is set with if_not_exists, the invocation
// is counted (invocations + 1, last_seen_at), and ReturnValues ALL_NEW
// answers with the item as it now is. The claim is ours when the item
// holds r.Token as the first attempt (a claim whose response was lost and
// which the SDK sent again finds its own token); otherwise the existing
// record comes back from the same answer with claimed false, and a replay
// of a COMPLETED call needs no other request.
//
// The claim's condition (claimCondition) refuses an item that exists
// without a record's state: Claim then answers claimed false with a record
// of that key whose Seal is seal.Forged (and no other field), so that the
// caller refuses the call as it does any record it did not seal, without
// another request.
// namedClaim is Claim as the code before the compact layout made it, on
// a store WithLayout(LayoutNamed): one UpdateItem setting every field of
// the call and of its first attempt, each an attribute of its own, with
// if_not_exists (claimCondition refuses an item without a record's
// state). Kept so that tests write the items runs in flight across the
// upgrade hold, as that code did; no function writes it.
func (s *Store) namedClaim(ctx context.Context, r *Record, now time.Time) (claimed bool, existing *Record, err error) {
	values := map[string]types.AttributeValue{
		"run_id": str(r.RunID), "seq": str(string(r.Seq)), "step": str(r.Step), "tool": str(r.Tool), "toolset_id": str(r.ToolsetID),
		"input_digest": str(r.InputDigest), "idempotency_key": str(r.Key), "state": str(string(StateInProgress)), "attempts": tabledef.N(1),
		"lease_until": tabledef.N(r.LeaseUntil.UnixMilli()), "token": str(r.Token), "updated_at": tabledef.N(now.UnixMilli()),
		attrAttemptLog: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{r.Token: attemptStart(1, r.StartedAt)}},
		"last_seen_at": tabledef.N(now.UnixMilli()), AttrExpiresAt: s.expires(), "one": tabledef.N(1),
		attrExternalKey: str(r.ExternalKey), attrExternalKeyToken: str(r.Token),
	}
	for k, v := range claimStates {
		values[k] = v
	}
	t := claimUnsealedTemplate
	r.Attempts = 1
	mac, err := s.sealOf(r, StateInProgress, "", nil)
	if err != nil {
		return false, nil, err
	}
	if mac != nil {
		t, values[AttrMAC] = claimTemplate, str(*mac)
	}
	in := t.input(s.table, callKey(r.RunID, r.Seq), values, nil, types.ReturnValueAllNew)
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	out, err := s.db.UpdateItem(ctx, in)
	if IsConditionFailed(err) {
		// An item without a record's state: nothing to replay, and never
		// a first attempt (claimCondition).
		return false, &Record{Key: r.Key, RunID: r.RunID, Seq: r.Seq, Seal: seal.Forged}, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("claim %s: %w", r.Key, err)
	}
	// Ours: the three attributes that say so, read as their types (a
	// mistyped one is not ours, and the full read below reports it).
	it := out.Attributes
	if t, ok := it["token"].(*types.AttributeValueMemberS); ok && t.Value == r.Token && getS(it, "state") == string(StateInProgress) {
		if n, ok := it["attempts"].(*types.AttributeValueMemberN); ok && n.Value == "1" {
			r.State, r.Attempts, r.UpdatedAt, r.Layout = StateInProgress, 1, now, LayoutNamed
			return true, nil, nil
		}
	}
	if existing, err = s.recordFromItem(r.Key, it); err != nil {
		return false, nil, err
	}
	return false, existing, nil
}

// WithLayout returns a copy of the store whose claims write layout l:
// LayoutCompact, as every function does, or LayoutNamed, as the code
// before the compact layout did (namedClaim), for tests of the records
// runs in flight across the upgrade hold. The other writes follow the
// layout of the record they are given.
func (s *Store) WithLayout(l Layout) *Store {
	c := *s
	c.layout = l
	return &c
}
