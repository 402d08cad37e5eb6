// Package table declares the ledger table once (docs/ledger.md, "The
// table declared once"): its key and TTL attributes, every item kind (the
// partition key's prefix, the sort key's shape, each attribute and its
// DynamoDB type), every index (its keys and what it projects), and every
// access (which principal makes which DynamoDB action on which item kind
// or index, naming which attributes, with which Select and ReturnValues).
//
// The rest follows from it: the DynamoDB adapters (shared/ledger,
// shared/review/dynamo, shared/credential/vault, shared/webhook/store)
// build keys from Kind.Key and map items whose
// attributes a test checks against Kind.Attributes; the CDK app
// generates each role's ledger statements from Accesses
// (dynamodb:LeadingKeys from the kind's prefix, dynamodb:Attributes,
// dynamodb:Select, dynamodb:ReturnValues); the cost model takes key shapes
// from the kinds; docs/ledger.md's item table is checked against it.
//
// The package imports no AWS SDK: the CDK app, the resolver's cost model
// and the functions all read it without linking DynamoDB's client.
package table
