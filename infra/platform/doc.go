// Package platform is toolgate's CDK constructs, which the CDK app
// (infra, cdk.json) assembles: the ledger stack (NewLedgerStack, the
// table alone) and the platform stack (NewPlatformStack), built from
// one construct per concern, each NewX(scope, id, props): the functions
// with their roles, log groups and lane aliases; the tool functions'
// ledger secrets; reviews (the review decision URL and reviewer
// accounts); access (the Solution execution role and the Publisher,
// Reviewer and Operator managed policies); publishing (the publish URL
// and the publish role's grants); the webhooks (their queues, rules
// and admin URL); the SSM parameters; and the alarms.
// Config and LoadConfig read the app's configuration (CDK context,
// docs/infra.md) and check it with the functions' own parsers, which
// link no AWS client (shared/functionconfig).
//
// A concern's construct adds a level to construct paths but none to
// logical IDs: the platform stack allocates each resource the logical
// ID it had when every resource was the stack's own child
// (docs/infra.md, "Template equivalence"), so the ledger table, the
// parameters and every other resource keep theirs.
package platform
