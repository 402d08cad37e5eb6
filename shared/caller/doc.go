// Package caller proves who calls a function a person calls (review-decision,
// review-request on the direct lane, a tool function on the direct lane, the
// start of a run). Lambda does not tell a function who invoked it, so the
// caller sends a proof: an sts:GetCallerIdentity request it presigned with
// its own AWS credentials (SigV4, query-string authentication). The function
// sends that request to STS and takes the caller's ARN from STS's answer,
// the pattern of HashiCorp Vault's AWS IAM auth method and of
// aws-iam-authenticator.
//
// The verifier, not the client, decides what a proof binds: the proof must
// sign the header X-Toolgate-Binding, whose value the verifier computes
// from the request it checks (Binding: the action, its target, the decision
// and the input digest). A proof made for one decision therefore fails STS's
// signature check when presented for another. Each accepted proof is
// recorded once (Proofs, which shared/ledger's ProofTable keeps in the
// ledger table as item PROOF#<SHA-256 of the signature>): the same proof
// for the same binding gets the first answer again, any other use is
// refused. docs/identity.md gives the rules and their reasons.
package caller
