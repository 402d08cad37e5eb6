// Package dynamo keeps reviews in the ledger table on DynamoDB
// (docs/reviews.md), as the table's declaration has them (shared/table):
// one item per review (table.Review: pk REVIEW#<review_id>, sk
// "REVIEW"), listed through the reviews-by-status index
// (table.ReviewsByStatus) without a Scan; the one-call binding of an
// approval (table.Binding: BIND#<review_id>, sk "BIND"); an execution's
// proven starter (table.Start: START#<execution ARN>, sk "START").
//
// Every read and write of those items is here (Store), one file per item
// kind: reviews.go, bindings.go, starts.go. Keys come from the kinds
// (Kind.Key, Kind.SKValue); items are mapped with the SDK's attributevalue
// into struct types a test checks against their kinds (table.Conform);
// conditions, updates and projections are built with the SDK's expression
// package, naming attributes through the kinds (Kind.Names). Each method's
// DynamoDB requests are the access table.Accesses declares for it, naming
// no other attribute (IAM's dynamodb:Attributes), which a test checks
// request by request; testdata/ledger-items holds the items as stored,
// which the store must go on reading and writing alike.
//
// A review holds the inputs it asks about, so only the review functions
// and the dispatcher touch it, and its TTL (expires_at) ends it.
package dynamo
