// Package park names what a parked call is made of (docs/parking.md):
// its id, derived from the PARKED ledger row that recorded it, the causes
// a call parks for, the statuses a park goes through, the bound on how
// often one call may park, the park Task's request (the compiled state
// machine's payload to review-request's park route) and the result
// review-decision sends to that Task's token.
//
// It holds names and shapes only, no I/O: review-request records parks,
// review-decision decides them, the dispatcher reads an approved park and
// the resolver compiles the states that wait for one.
package park
