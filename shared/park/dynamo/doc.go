// Package dynamo keeps parked calls in the ledger table on DynamoDB
// (docs/parking.md, "Recording a park"), as the table's declaration has
// them (shared/table): one item per park (table.Park: pk PARK#<park id>,
// sk "PARK"), listed by status through the parks-by-status index
// (table.ParksByStatus) and, while a park waits for a credential, found by
// scope through parks-by-scope (table.ParksByScope); and the one read of
// ledger rows a park is recorded from, the PARKED rows of one call
// (table.Row).
//
// Each method's DynamoDB requests are the access table.Accesses declares
// for it, naming no other attribute (IAM's dynamodb:Attributes):
// review-request records parks (Record, ParkedRows, Get), review-decision
// reads, decides and lists them (Get, Decide, ListByStatus) and reads, for
// a decision, a park's run's starter and the review its PARKED row names
// (Starter, RowReview). Decision,
// the read a tool function's dispatcher is to make, has no access yet.
package dynamo
