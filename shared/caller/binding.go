package caller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// BindingHeader is the header a proof must sign; its value is
// Binding.Value. Header names are case-insensitive (RFC 9110 section 5.1);
// SigV4 lists them lower-cased in X-Amz-SignedHeaders.
const BindingHeader = "X-Toolgate-Binding"

// Actions a proof is bound to: one per kind of call a person makes.
const (
	ActionDecide      = "review.decide"    // review-decision: a decision; Target the review id
	ActionShow        = "review.show"      // review-decision: show; Target the review id
	ActionList        = "review.list"      // review-decision: a listing; Target the status filter
	ActionRequest     = "review.request"   // review-request, direct lane: Target the run id, Decision the tool
	ActionStatus      = "review.status"    // review-request, direct lane: Target the review id
	ActionInvoke      = "tool.invoke"      // a tool function, direct lane: Target the idempotency key
	ActionStart       = "run.start"        // the start of an execution: Target the execution ARN
	ActionWhoAmI      = "whoami"           // WhoAmI: the caller asks STS itself
	ActionPublish     = "solution.publish" // the publish function: Target the Solution file's name, InputDigest its source digest
	ActionRegister    = "toolset.register" // the publish function: Target the toolset id, InputDigest the document's digest
	ActionShowToolset = "toolset.show"     // the publish function: a registered toolset's read; Target the toolset id
	ActionShapes      = "toolset.shapes"   // the publish function: a registered toolset's learned shapes; Target the toolset id
	// ActionCredentialsSet is the publish function's store of a
	// credential: Target "<toolset name>/<target>", InputDigest the
	// digest of the request's other fields and of the secret's SHA-256
	// (publishapi.CredentialSetDigest), so that a proof made for one
	// secret is refused with another.
	ActionCredentialsSet = "credentials.set"
	// ActionCredentialsList is the publish function's listing of a
	// toolset name's credentials (metadata only): Target the toolset name.
	ActionCredentialsList = "credentials.list"
	// ActionCredentialsRevoke is the publish function's delete of one
	// credential: Target "<toolset name>/<target>", Detail the scope as
	// the request names it (publishapi.CredentialScopeDetail).
	ActionCredentialsRevoke = "credentials.revoke"
	// ActionCredentialsAllow is the publish function's allowing of a
	// registered toolset id to use its name's credentials: Target the
	// toolset id.
	ActionCredentialsAllow = "credentials.allow"
	// ActionWebhooksSubscribe is the webhooks function's creation of a
	// subscription: Target the endpoint URL as sent, InputDigest the
	// digest of its event patterns and Solution filter
	// (webhookapi.SubscribeDigest), so that a proof made for one set of
	// events is refused for another (docs/webhooks.md).
	ActionWebhooksSubscribe = "webhooks.subscribe"
	// ActionWebhooksManage is the webhooks function's other reads and
	// changes: Target a subscription id, or "list" or "deliveries"; Detail
	// the operation ("rotate-secret", "disable", "list", or the event id
	// whose deliveries are listed).
	ActionWebhooksManage = "webhooks.manage"
	// ActionWebhooksRedrive is the webhooks function's dead-letter queue
	// read and redrive: Target "list" or "redrive".
	ActionWebhooksRedrive = "webhooks.redrive"
	// ActionParkList is review-decision's listing of parked calls: Target
	// the status filter as the request names it (docs/parking.md).
	ActionParkList = "park.list"
	// ActionParkShow is review-decision's read of one parked call: Target
	// the park id.
	ActionParkShow = "park.show"
	// ActionParkDecide is review-decision's decision on a parked call:
	// Target the park id, Decision "approve", "reject" or "resume",
	// InputDigest the park's current_digest (the server's tool definition
	// an approval accepts; empty for credentials.expired), so that a proof
	// made for one definition is refused once the server changed it again.
	ActionParkDecide = "park.decide"
	// ActionParkCancel is review-decision's cancel of a parked call, which
	// stops its run: Target the park id.
	ActionParkCancel = "park.cancel"
	// ActionRunFork is review-decision's fork of a run (docs/fork.md):
	// Target the parent's execution ARN, Decision the fork's, Detail
	// "rerun_reads" or "".
	ActionRunFork = "run.fork"
	// ActionLedgerReconcile is review-decision's record of a
	// reconciliation of a call whose outcome is unknown (docs/fork.md,
	// "Reconciling"): Target the call's idempotency key, Decision the
	// outcome ("applied" or "not_applied"), InputDigest the digest of the
	// result (tool.InputDigest of its JSON; empty without one), Detail the
	// reason, so that a proof made for one word on a call is refused for
	// another.
	ActionLedgerReconcile = "ledger.reconcile"
	// ActionSourcesManage is the sources function's reads and changes of
	// inbound sources and the inbound dead-letter queue: add, list,
	// rotate-secret, retire-secrets, remove, dlq list and redrive
	// (docs/webhooks.md, "Receiving events"; shared/inboundapi routes).
	ActionSourcesManage = "sources.manage"
	// ActionSchedulesManage is the sources function's reads and changes
	// of schedules: add, list, pause, resume and remove.
	ActionSchedulesManage = "schedules.manage"
)

// Binding is what one proof may be used for. Every field is part of the
// signed value, so a proof made for one binding is refused for any other.
type Binding struct {
	Action string
	// Target is the id the action acts on (a review id, a run id, an
	// idempotency key, an execution ARN).
	Target string
	// Decision is "approve" or "reject" for ActionDecide, the tool for
	// ActionRequest, else empty.
	Decision string
	// InputDigest is the digest of the inputs concerned (tool.InputDigest),
	// or empty.
	InputDigest string
	// Detail holds the request's other members the proof must cover, as
	// the verifier encodes them (a direct-lane review request's step, of,
	// toolset and timeout), or is empty.
	Detail string
}

// Value is the binding header's value: the hex SHA-256 of the JSON array
// ["toolgate-caller-proof/1", Action, Target, Decision, InputDigest,
// Detail], an encoding in which no two bindings coincide.
func (b Binding) Value() string {
	doc, _ := json.Marshal([]string{"toolgate-caller-proof/1", b.Action, b.Target, b.Decision, b.InputDigest, b.Detail})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// Proof validity, in the verifier's own terms (docs/identity.md).
const (
	// Window is how old a proof's X-Amz-Date may be when it is verified
	// (or, for a start proof, at the execution's start). STS itself honours
	// a presigned GetCallerIdentity for 15 minutes whatever X-Amz-Expires
	// says, so the verifier enforces its own window.
	Window = 60 * time.Second
	// Skew is how far in the future X-Amz-Date may be, for clocks that
	// differ slightly (both sides keep NTP time on AWS).
	Skew = 5 * time.Second
	// MaxProofBytes bounds a proof: the URL with a session token (STS
	// session tokens are up to a few KiB) stays well under it.
	MaxProofBytes = 8 << 10
	// stsVersion and stsAction are the only request a proof may be.
	stsVersion = "2011-06-15"
	stsAction  = "GetCallerIdentity"
	// emptyPayloadHash is the SHA-256 of an empty body: a presigned GET
	// has none.
	emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// DefaultEndpoint is the regional STS endpoint of region: proofs are
// verified against one configured endpoint (EnvSTSEndpoint).
func DefaultEndpoint(region string) string { return "https://sts." + region + ".amazonaws.com" }

// Sign makes a proof for b: a GetCallerIdentity request to the STS
// endpoint (scheme and host; the path is "/"), presigned with creds for
// region at now, with X-Amz-Expires 60 and BindingHeader signed. The proof
// is a bearer credential for its binding until the window ends: send it
// only to the function it is for, and never log it.
func Sign(ctx context.Context, creds aws.CredentialsProvider, endpoint, region string, b Binding, now time.Time) (string, error) {
	base, err := url.Parse(endpoint)
	if err != nil || base.Host == "" || (base.Scheme != "https" && base.Scheme != "http") {
		return "", fmt.Errorf("STS endpoint %q is not an http(s) URL", endpoint)
	}
	if creds == nil {
		return "", fmt.Errorf("no AWS credentials to sign the caller proof with")
	}
	c, err := creds.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("retrieve AWS credentials: %w", err)
	}
	u := url.URL{Scheme: base.Scheme, Host: base.Host, Path: "/",
		RawQuery: url.Values{"Action": {stsAction}, "Version": {stsVersion}, "X-Amz-Expires": {"60"}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set(BindingHeader, b.Value())
	signed, hdr, err := v4.NewSigner().PresignHTTP(ctx, c, req, emptyPayloadHash, "sts", region, now.UTC())
	if err != nil {
		return "", fmt.Errorf("presign GetCallerIdentity: %w", err)
	}
	if !strings.Contains(strings.ToLower(hdr.Get(BindingHeader)), b.Value()) {
		return "", fmt.Errorf("presign GetCallerIdentity: the binding header was not signed")
	}
	return signed, nil
}

// WhoAmI asks STS, through a proof of its own, which ARN creds belong to:
// what a client names its direct-lane run ids after
// (lane.DirectRunPrefix). endpoint is the STS endpoint the functions
// verify proofs against.
func WhoAmI(ctx context.Context, creds aws.CredentialsProvider, endpoint, region string) (string, error) {
	proof, err := Sign(ctx, creds, endpoint, region, Binding{Action: ActionWhoAmI}, time.Now())
	if err != nil {
		return "", err
	}
	u, err := url.Parse(proof)
	if err != nil {
		return "", err
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return ask(ctx, c, u, Binding{Action: ActionWhoAmI}.Value())
}

// ProofHeader carries a caller proof on a Function URL request
// (review-decision's, publish's; docs/identity.md, "The caller proof").
const ProofHeader = "X-Toolgate-Caller-Proof"
