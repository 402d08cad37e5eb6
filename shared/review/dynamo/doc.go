// Package dynamo keeps reviews in the ledger table on DynamoDB
// (docs/reviews.md): one item per review, pk "REVIEW#<review_id>", sk
// "REVIEW", listed through the table's reviews-by-status index without a
// Scan; the one-call binding of an approval in "BIND#<review_id>"; an
// execution's proven starter in "START#<execution ARN>". Every read and
// write of those items is here (Store): a review holds the inputs it asks
// about, so only the review functions and the dispatcher touch it, and its
// TTL (expires_at) ends it. Each method's DynamoDB requests are the ones
// infra/items.go grants, and no more.
package dynamo
