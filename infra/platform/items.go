package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"

	"github.com/toolgate/toolgate/shared/table"
)

// ledgerStatements are principal p's statements on the ledger table and
// its indexes: one per access of table.Of(p), in the declaration's order
// (shared/table accesses.go; docs/infra.md, "Least privilege"). A function
// role gets its functionSpec.Principal's, the Operator managed policy
// table.Operator's. indexLeadingKeys is PlatformStackProps.IndexLeadingKeys.
func ledgerStatements(p table.Principal, l ledgerARNs, indexLeadingKeys bool) []awsiam.PolicyStatement {
	var out []awsiam.PolicyStatement
	for _, a := range table.Of(p) {
		out = append(out, accessStatement(a, l, indexLeadingKeys))
	}
	return out
}

// accessStatement is access a as one statement: its actions on the table,
// or a Query of its index on the index's ARN, under accessConditions.
func accessStatement(a table.Access, l ledgerARNs, indexLeadingKeys bool) awsiam.PolicyStatement {
	resource := l.Table
	if a.Index != nil {
		resource = l.index(a.Index.Name)
	}
	actions := make([]string, len(a.Actions))
	for i, x := range a.Actions {
		actions[i] = string(x)
	}
	return ledgerStatement(a.Sid, actions, []*string{resource}, accessConditions(a, indexLeadingKeys))
}

// accessConditions is access a's IAM condition block, nil when it has
// none (DynamoDB Developer Guide, "Using IAM policy conditions for
// fine-grained access control"):
//
//   - ForAllValues:StringLike dynamodb:LeadingKeys ["<prefix>*", …], one
//     pattern for each of a.Prefixes(): the items whose partition key
//     starts with a prefix of the kinds it reaches. On an index Query,
//     ["<Index.PKPrefix>*"] (the index's partition key values) when
//     indexLeadingKeys is set (not the default) and the index's partition
//     key is a string with a prefix (the webhook-unsent index's is the
//     number 1), none otherwise: IAM documents the key as the table's
//     partition key, and whether it
//     evaluates it against an index's partition key is not confirmed, so
//     an index Query is bounded by the index (its resource) and, where the
//     access names them, by dynamodb:Attributes, kept either way
//     (docs/infra.md, "Ledger items, per key prefix").
//   - ForAllValues:StringLike dynamodb:Attributes a.Attributes, when set:
//     the only attributes a request may name. DynamoDB evaluates the key on
//     the attributes a request names, or those a read returns, so a read
//     without a projection (every attribute) is refused by any list.
//   - StringEquals dynamodb:ReturnValues a.ReturnValues, when set. An
//     UpdateItem always carries the key (NONE when it sends none); NONE
//     reads nothing back, where ALL_OLD and ALL_NEW would return the whole
//     item.
//   - StringEqualsIfExists dynamodb:Select SPECIFIC_ATTRIBUTES, with
//     a.SpecificAttributes. DynamoDB documents Select as a Query's and a
//     Scan's parameter, so a GetItem is bounded by the attributes; the
//     same guide says a read's Select "always has a value (ALL_ATTRIBUTES,
//     unless otherwise specified)", so where IAM sees one on a GetItem
//     without a projection, this denies it too.
func accessConditions(a table.Access, indexLeadingKeys bool) map[string]any {
	like := map[string]any{}
	var keys []string
	for _, p := range a.Prefixes() {
		keys = append(keys, p+"*")
	}
	if a.Index != nil && indexLeadingKeys && a.Index.PKPrefix != "" {
		keys = append(keys, a.Index.PKPrefix+"*")
	}
	if keys != nil {
		like["dynamodb:LeadingKeys"] = keys
	}
	if a.Attributes != nil {
		like["dynamodb:Attributes"] = a.Attributes
	}
	c := map[string]any{}
	if len(like) > 0 {
		c["ForAllValues:StringLike"] = like
	}
	if a.ReturnValues != "" {
		c["StringEquals"] = map[string]any{"dynamodb:ReturnValues": a.ReturnValues}
	}
	if a.SpecificAttributes {
		c["StringEqualsIfExists"] = map[string]any{"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}
	}
	if len(c) == 0 {
		return nil
	}
	return c
}
