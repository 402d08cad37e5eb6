package ledger

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// template is an UpdateItem's expressions built once, at start, with the
// SDK's expression package, for the requests every invocation makes (the
// claim, the finish): building them per call costs more client CPU than
// the rest of the dispatcher's work (docs/performance.md). Each value, and
// each name that changes per call (a claim token in a path), is a slot the
// call fills by its key.
type template struct {
	update, condition *string
	names             map[string]string // placeholder -> name, or slot key
	nameSlots         map[string]string // placeholder -> slot key
	valueSlots        map[string]string // slot key -> value placeholder
}

const slotMark = "\x00slot:"

// slot is a value or name the call supplies, by key.
func slot(key string) string { return slotMark + key }

// newTemplate builds the expressions build returns, whose values are all
// expression.Value(slot(key)) and whose per-call names hold slot(key).
func newTemplate(build func() (expression.UpdateBuilder, *expression.ConditionBuilder)) template {
	u, cond := build()
	b := expression.NewBuilder().WithUpdate(u)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	ex, err := b.Build()
	if err != nil {
		panic("ledger: build an update template: " + err.Error())
	}
	t := template{update: ex.Update(), condition: ex.Condition(), names: ex.Names(),
		nameSlots: map[string]string{}, valueSlots: map[string]string{}}
	for ph, n := range t.names {
		if key, ok := strings.CutPrefix(n, slotMark); ok {
			t.nameSlots[ph] = key
		}
	}
	for ph, v := range ex.Values() {
		s, ok := v.(*types.AttributeValueMemberS)
		key, isSlot := "", false
		if ok {
			key, isSlot = strings.CutPrefix(s.Value, slotMark)
		}
		if !isSlot {
			panic("ledger: an update template's value is not a slot")
		}
		t.valueSlots[key] = ph
	}
	return t
}

// input is the UpdateItem of the template on key, with the call's values
// and per-call names by slot key. A missing slot is the ledger's own bug.
func (t template) input(table string, key map[string]types.AttributeValue, values map[string]types.AttributeValue, names map[string]string, ret types.ReturnValue) *dynamodb.UpdateItemInput {
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key, ReturnValues: ret,
		UpdateExpression: t.update, ConditionExpression: t.condition,
		ExpressionAttributeNames:  make(map[string]string, len(t.names)),
		ExpressionAttributeValues: make(map[string]types.AttributeValue, len(t.valueSlots)),
	}
	for ph, n := range t.names {
		if k, ok := t.nameSlots[ph]; ok {
			n = names[k]
		}
		in.ExpressionAttributeNames[ph] = n
	}
	for k, ph := range t.valueSlots {
		v, ok := values[k]
		if !ok {
			panic(fmt.Sprintf("ledger: no value for the update's slot %q", k))
		}
		in.ExpressionAttributeValues[ph] = v
	}
	return in
}
