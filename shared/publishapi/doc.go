// Package publishapi is the publish function's contract with those who
// call and deploy it (docs/infra.md, "Publishing"): the CLI (toolgate
// publish, toolgate toolset register, show and diff), the local stack and
// infra. It holds the requests (DirectRequest for a direct invocation;
// Body, RegisterBody and ProofHeader for the Function URL's POST
// /solutions, POST /toolsets and GET /toolsets/{id}), the answers (Result,
// RegisterResult, ShowResult; ErrorBody and the Code* error codes for a
// refusal), the caller proof bindings each request is signed for
// (Binding, RegisterBinding, RegisterDraftBinding, ShowBinding, over
// SourceDigest), and the environment the function reads (EnvTable,
// EnvStage, EnvParamsFile).
//
// The function itself is functions/publish/publish. This package links no
// AWS SDK and nothing of the function, so that a caller links neither.
package publishapi
