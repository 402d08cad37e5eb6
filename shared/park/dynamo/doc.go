// Package dynamo is the parked-call items' adapter to DynamoDB
// (docs/parking.md): Decisions is review-decision's side, which reads,
// lists and decides parks.
package dynamo
