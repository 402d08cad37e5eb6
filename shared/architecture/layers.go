package architecture

import "strings"

// Module is the module path every package path below is relative to.
const Module = "github.com/toolgate/toolgate"

// Layer is one layer of the house: the packages in it, the layers they may
// import from besides their own, and the module paths they may not link at
// all, even through another package.
type Layer struct {
	// Name is the layer's name, as docs/design.md and the README use it.
	Name string
	// Packages are package paths below Module; "x/..." is x and every
	// package under it. A package belongs to the layer whose entry names
	// it most specifically.
	Packages []string
	// Uses names the layers below this one that its packages may import.
	Uses []string
	// Forbids are import-path prefixes of modules outside toolgate that no
	// package of the layer may link, directly or not. A prefix ending in
	// "$" must match a whole path.
	Forbids []string
}

// runTime is what only a deployed function links: the AWS service clients
// and the Lambda runtime loop (aws-lambda-go/lambda; its messages package,
// the wire type of a Lambda error, is part of the tool contract).
var runTime = []string{"github.com/aws/aws-sdk-go-v2/service/", "github.com/aws/aws-lambda-go/lambda$"}

// Layers are toolgate's layers from the bottom up.
var Layers = []Layer{
	{
		Name:     "base",
		Packages: []string{"shared/excerpt"},
		Forbids:  runTime,
	},
	{
		Name:     "contract",
		Packages: []string{"shared/tool", "shared/table", "shared/mcpmeta", "shared/deployment"},
		Uses:     []string{"base"},
		Forbids:  runTime,
	},
	{
		Name: "rules",
		Packages: []string{"shared/dnsname", "shared/hostlist", "shared/fetchurl", "shared/recipient",
			"shared/mailheader", "shared/reviewer", "shared/enduser", "shared/invisible", "shared/schema", "shared/seal",
			"shared/externalkey", "shared/inputrecord", "shared/solutioncomment", "shared/catalog", "shared/toolset", "shared/lane",
			"shared/toolfloor", "shared/httprule", "shared/tracecontext", "shared/credential", "shared/addrrule",
			"shared/webhook", "shared/inbound", "shared/park", "shared/schedule", "shared/schemashape",
			"shared/observed"},
		Uses:    []string{"base", "contract"},
		Forbids: runTime,
	},
	{
		Name:     "compiler",
		Packages: []string{"resolver", "resolver/asl", "resolver/gate", "resolver/flowchart", "resolver/changelog", "resolver/declare"},
		Uses:     []string{"base", "contract", "rules"},
		Forbids:  runTime,
	},
	{
		Name: "domain",
		Packages: []string{"shared/review", "shared/caller", "shared/functionconfig",
			"shared/publishapi", "shared/webhookapi", "shared/inboundapi", "shared/localkeys", "shared/toolcall"},
		Uses:    []string{"base", "contract", "rules"},
		Forbids: runTime,
	},
	{
		Name: "adapters",
		Packages: []string{"shared/ledger", "shared/review/dynamo", "shared/review/stepfunctions",
			"shared/ledger/tabledef", "shared/secrets", "shared/coldstart", "shared/functionurl",
			"shared/deployment/ssmparams", "shared/deployment/statemachines", "shared/tracing", "shared/credential/vault",
			"shared/webhook/store", "shared/webhook/outbox", "shared/sqsbatch", "shared/park/dynamo", "shared/inbound/store",
			"shared/observed/dynamo"},
		Uses: []string{"base", "contract", "rules", "domain"},
	},
	{
		Name: "tools",
		Packages: []string{"shared/sendemail", "shared/fetch", "shared/httptool", "shared/mcptool", "shared/platformtool",
			"functions/workflow-validator/validator"},
		Uses: []string{"base", "contract", "rules", "compiler", "domain", "adapters"},
	},
	{
		Name: "handlers",
		Packages: []string{"shared/dispatch", "shared/toolfunction", "functions/publish/publish",
			"functions/review-request/request", "functions/review-decision/decision",
			"functions/webhooks/admin", "functions/webhook-delivery/delivery",
			"functions/sources/sources", "functions/webhook-receiver/receiver", "functions/inbound-start/starter"},
		Uses: []string{"base", "contract", "rules", "compiler", "domain", "adapters", "tools"},
	},
	{
		Name:     "functions",
		Packages: []string{"functions/...", "examples/create-ticket/..."},
		Uses:     []string{"base", "contract", "rules", "compiler", "domain", "adapters", "tools", "handlers"},
	},
	{
		Name:     "cli",
		Packages: []string{"resolver/cli/...", "resolver/cmd/..."},
		Uses:     []string{"base", "contract", "rules", "compiler", "domain", "adapters", "tools"},
	},
	{
		Name:     "cdk",
		Packages: []string{"infra", "infra/platform", "infra/toolfunction", "examples/team-tool-cdk"},
		Uses:     []string{"base", "contract", "rules", "domain"},
		Forbids:  runTime,
	},
	{
		Name: "test support",
		Packages: []string{"shared/ledger/ledgertest", "shared/review/reviewtest", "shared/testkit", "shared/architecture",
			"shared/functionurl/functionurltest", "resolver/resolvertest", "shared/fetch/fetchtest"},
		Uses: []string{"base", "contract", "rules", "domain", "adapters"},
	},
	{
		Name:     "local stack",
		Packages: []string{"infra/local/..."},
		Uses: []string{"base", "contract", "rules", "compiler", "domain", "adapters", "tools", "handlers",
			"functions", "cli", "cdk", "test support"},
	},
}

// LayerOf returns the layer of the package at path (below Module), the one
// whose entry names it most specifically, and false when none does.
func LayerOf(path string) (Layer, bool) {
	best, bestLen, found := Layer{}, -1, false
	for _, l := range Layers {
		for _, p := range l.Packages {
			n, ok := match(p, path)
			if ok && n > bestLen {
				best, bestLen, found = l, n, true
			}
		}
	}
	return best, found
}

// match reports whether pattern names path, and how specifically: exact
// names beat trees, and longer trees beat shorter ones.
func match(pattern, path string) (int, bool) {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		if path == tree || strings.HasPrefix(path, tree+"/") {
			return len(tree), true
		}
		return 0, false
	}
	return len(pattern) + 1, path == pattern
}
