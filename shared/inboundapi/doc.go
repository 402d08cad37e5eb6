// Package inboundapi is the contract of inbound events and schedules
// (docs/webhooks.md, "Receiving events") with those who call, feed and
// deploy their functions: the message the inbound queue carries
// (Message, DecodeMessage), the environment of the sources,
// webhook-receiver and inbound-start functions (Env*), and the sources
// function's routes, requests, answers and error codes (toolgate sources,
// toolgate schedules).
//
// The functions themselves live under functions/; the items under
// shared/inbound/store. This package links no AWS SDK and nothing of the
// functions, so that a caller (the CLI, the local stack, infra) links
// neither.
package inboundapi
