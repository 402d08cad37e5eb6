// Package cost estimates what a run cost on AWS from its ledger rows (and,
// when it can be read, its Step Functions execution history): per tool and
// in total, Lambda GB-seconds (memory_mb × duration_ms, init excluded) and
// requests, DynamoDB write and read request units, SES messages, and Step
// Functions state transitions, priced with a dated table of one region's
// list prices (prices.json, embedded; LoadPrices reads another). Every
// figure is an estimate, and says so (docs/ledger.md, "Cost of a run").
//
// The DynamoDB units follow one table, RequestsPerInvocation: the
// dispatcher's requests per outcome of an invocation, whose source is
// docs/ledger.md, "DynamoDB requests per invocation". A request's units
// follow the size of the item it touches, estimated over the attributes
// and key shapes its item kind declares (shared/table, which links no AWS
// SDK either). The package links no AWS SDK: `toolgate ledger --cost` (resolver/cli) reads the rows and the
// history and hands them over as Calls and event types.
package cost
