// Package stack starts toolgate's whole local stack: dynalite with the
// ledger table, the SES v2 emulator, every function under the Lambda RIE
// (the platform tools' proxy, lambda-tool, and the MCP tools' mcp-call
// among them), the example team function create-ticket under its own RIE
// with its ticket service, the local MCP server (infra/local/mcpserver),
// the local Step Functions endpoint, the STS, SSM and Lambda (Invoke and
// ListTags) stand-ins, the SQS stand-in with the webhook queues
// (infra/local/sqs) and the pollers that invoke webhook-delivery with their
// batches, the demo data server and a trace receiver every function exports
// its spans to (infra/local/otlpreceiver), and writes the parameters file
// `toolgate publish` reads (the same names as SSM).
package stack
