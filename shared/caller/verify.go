package caller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// Environment variables of a function that verifies callers (docs/identity.md).
const (
	// EnvSTSEndpoint is the one STS endpoint proofs may name (scheme and
	// host); default DefaultEndpoint(AWS_REGION).
	EnvSTSEndpoint = "TOOLGATE_STS_ENDPOINT"
	// EnvSTSAllowHTTP, "true" on the local stack only, accepts an
	// http://127.0.0.1 STS endpoint (the stand-in). The CDK app never sets
	// it, and its tests assert so.
	EnvSTSAllowHTTP = "TOOLGATE_STS_ALLOW_HTTP"
	// EnvSessionRoles lists, comma-separated, the role names whose session
	// names identify a person (IAM Identity Center roles, or roles whose
	// trust policy pins sts:RoleSessionName).
	EnvSessionRoles = "TOOLGATE_SESSION_ROLES"
	// EnvAccount is the deployment's own AWS account id (12 digits): the
	// CDK app sets it to the stack's account on every function, the local
	// stack to its own. A proof of any other account's principal is
	// refused (WrongAccount), whatever STS answers: STS answers a
	// presigned GetCallerIdentity for the credentials of any account
	// (docs/identity.md, "Accounts").
	EnvAccount = "TOOLGATE_ACCOUNT"
	// EnvReviewerAccounts lists, comma-separated, other AWS accounts of
	// the organisation whose principals may review (12-digit ids; default
	// none). Only review-decision's verifier admits them
	// (Config.WithAccounts); the publish function reads the same list to
	// check the accounts reviewer patterns name (docs/reviews.md).
	EnvReviewerAccounts = "TOOLGATE_REVIEWER_ACCOUNTS"
)

// Reason says why a proof was refused: a stable word for logs and tests.
type Reason string

const (
	Missing     Reason = "proof-missing"     // no proof
	Malformed   Reason = "proof-malformed"   // not a presigned GetCallerIdentity URL within the rules
	WrongHost   Reason = "proof-host"        // not the configured STS endpoint
	Stale       Reason = "proof-stale"       // X-Amz-Date outside the window
	Unbound     Reason = "proof-unbound"     // the binding header is not signed
	Replayed    Reason = "proof-replayed"    // already used for another binding
	Refused     Reason = "proof-refused"     // STS refused it (wrong binding, signature, key)
	Unavailable Reason = "sts-unavailable"   // STS or the proof table could not be reached: retry
	Unsupported Reason = "proof-unsupported" // STS answered an identity toolgate does not accept
	// WrongAccount: STS answered a principal of an account the verifier
	// does not admit (Config.Account, Config.OtherAccounts).
	WrongAccount Reason = "caller-account"
)

// Error is a refused proof. Its message never contains the proof.
type Error struct {
	Reason  Reason
	Message string
	Err     error // the transport or table error behind Unavailable
}

func (e *Error) Error() string { return "caller proof: " + e.Message + " [" + string(e.Reason) + "]" }
func (e *Error) Unwrap() error { return e.Err }

func refuse(r Reason, format string, a ...any) *Error {
	return &Error{Reason: r, Message: fmt.Sprintf(format, a...)}
}

// Config is a verifier's configuration, read at cold start.
type Config struct {
	// Endpoint is the STS endpoint (scheme://host) proofs must name.
	Endpoint string
	// AllowHTTP accepts http:// for a 127.0.0.1 endpoint (the local stack).
	AllowHTTP bool
	// SessionRoles are role names whose session names count (Identity).
	SessionRoles []string
	// Account is the deployment's own AWS account id (EnvAccount): 12
	// digits, required.
	Account string
	// OtherAccounts are further accounts whose principals the verifier
	// admits: review-decision's reviewer accounts (EnvReviewerAccounts),
	// empty everywhere else.
	OtherAccounts []string
	// Log receives one line for each proof refused for its account
	// (default slog.Default()); the line never holds the proof.
	Log *slog.Logger
}

// WithAccounts returns a copy of c that also admits principals of accounts
// (review-decision's reviewer accounts).
func (c Config) WithAccounts(accounts []string) Config {
	c.OtherAccounts = append(slices.Clip(c.OtherAccounts), accounts...)
	return c
}

// ValidAccount reports whether s is an AWS account id: exactly 12 decimal
// digits (AWS Account Management Reference Guide, "Viewing AWS account
// identifiers").
func ValidAccount(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseAccounts reads a comma-separated list of account ids (the value of
// EnvReviewerAccounts); blanks around ids are ignored, an empty value is no
// account. Each id must pass ValidAccount and appear once.
func ParseAccounts(v string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if !ValidAccount(a) {
			return nil, fmt.Errorf("%q is not an AWS account id (12 digits)", excerpt.Bytes(a, 40, "..."))
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("account %s is listed twice", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// ReviewerAccountsFromEnv reads EnvReviewerAccounts (ParseAccounts).
func ReviewerAccountsFromEnv(getenv func(string) string) ([]string, error) {
	accounts, err := ParseAccounts(getenv(EnvReviewerAccounts))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvReviewerAccounts, err)
	}
	return accounts, nil
}

// ConfigFromEnv reads EnvSTSEndpoint (default from AWS_REGION),
// EnvSTSAllowHTTP, EnvSessionRoles and EnvAccount (required), and
// validates them. It admits the deployment's account only; review-decision
// adds its reviewer accounts with WithAccounts.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Endpoint: getenv(EnvSTSEndpoint), Account: getenv(EnvAccount)}
	if !ValidAccount(cfg.Account) {
		return cfg, fmt.Errorf("%s=%q is not an AWS account id (12 digits): set it to the deployment's account", EnvAccount, excerpt.Bytes(cfg.Account, 40, "..."))
	}
	if cfg.Endpoint == "" {
		region := getenv("AWS_REGION")
		if region == "" {
			return cfg, fmt.Errorf("%s is not set, and no AWS_REGION to derive it from", EnvSTSEndpoint)
		}
		cfg.Endpoint = DefaultEndpoint(region)
	}
	switch v := getenv(EnvSTSAllowHTTP); v {
	case "", "false":
	case "true":
		cfg.AllowHTTP = true
	default:
		return cfg, fmt.Errorf("%s=%q is not true or false", EnvSTSAllowHTTP, v)
	}
	for _, r := range strings.Split(getenv(EnvSessionRoles), ",") {
		if r = strings.TrimSpace(r); r != "" {
			cfg.SessionRoles = append(cfg.SessionRoles, r)
		}
	}
	_, err := cfg.endpoint()
	return cfg, err
}

func (c Config) endpoint() (*url.URL, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s=%q is not scheme://host", EnvSTSEndpoint, c.Endpoint)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && c.AllowHTTP && isLoopback(u.Hostname()):
	case u.Scheme == "http" && c.AllowHTTP:
		return nil, fmt.Errorf("%s=%q: http is accepted only for 127.0.0.1 (the local stack's stand-in)", EnvSTSEndpoint, c.Endpoint)
	default:
		return nil, fmt.Errorf("%s=%q is not https", EnvSTSEndpoint, c.Endpoint)
	}
	return u, nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Proofs records accepted proofs: shared/ledger ProofTable keeps them in
// the ledger table, so that this package links no DynamoDB client.
type Proofs interface {
	// Record stores rec unless a record with its ID exists, and returns the
	// record that holds (rec, or the earlier one) and whether rec was new.
	Record(ctx context.Context, rec ProofRecord) (ProofRecord, bool, error)
}

// ProofRecord is one accepted proof.
type ProofRecord struct {
	ID        string // hex SHA-256 of the proof's X-Amz-Signature
	Binding   string // Binding.Value
	ARN       string // as STS answered
	ExpiresAt time.Time
}

// Verifier checks proofs. Construct it with NewVerifier.
type Verifier struct {
	endpoint     *url.URL
	sessionRoles []string
	accounts     []string // the deployment's own first
	proofs       Proofs
	client       *http.Client
	now          func() time.Time
	log          *slog.Logger
}

// NewVerifier returns a verifier for cfg that records proofs in proofs.
// Its HTTP client follows no redirects and gives STS 5 seconds. cfg.Account
// and every one of cfg.OtherAccounts must pass ValidAccount.
func NewVerifier(cfg Config, proofs Proofs) (*Verifier, error) {
	u, err := cfg.endpoint()
	if err != nil {
		return nil, err
	}
	if proofs == nil {
		return nil, errors.New("a verifier needs a proof table")
	}
	accounts := append([]string{cfg.Account}, cfg.OtherAccounts...)
	for _, a := range accounts {
		if !ValidAccount(a) {
			return nil, fmt.Errorf("a verifier admits AWS account ids (12 digits), not %q", excerpt.Bytes(a, 40, "..."))
		}
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Verifier{endpoint: u, sessionRoles: cfg.SessionRoles, accounts: accounts, proofs: proofs, now: time.Now, log: log,
		client: &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// Account is the deployment's own account (Config.Account).
func (v *Verifier) Account() string { return v.accounts[0] }

// WithClock returns a copy of v that reads time from now (tests).
func (v *Verifier) WithClock(now func() time.Time) *Verifier {
	c := *v
	c.now = now
	return &c
}

// allowedQuery are the query parameters a proof may carry, once each:
// GetCallerIdentity's and SigV4's query-string authentication.
var allowedQuery = []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
	"X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"}

// Verify checks proof for b and returns the caller. Its X-Amz-Date must be
// at most Window before ref and at most Skew after it; ref is the time of
// the check, or for a start proof the execution's start (VerifyAt).
// Errors are *Error.
func (v *Verifier) Verify(ctx context.Context, proof string, b Binding) (Identity, error) {
	return v.VerifyAt(ctx, proof, b, time.Time{})
}

// VerifyAt is Verify with the window measured from ref (zero: now).
func (v *Verifier) VerifyAt(ctx context.Context, proof string, b Binding, ref time.Time) (Identity, error) {
	now := v.now()
	if ref.IsZero() {
		ref = now
	}
	if proof == "" {
		return Identity{}, refuse(Missing, "the call carries no caller proof: sign one with your AWS credentials (toolgate does it for you)")
	}
	if len(proof) > MaxProofBytes {
		return Identity{}, refuse(Malformed, "the proof is %d bytes, over %d", len(proof), MaxProofBytes)
	}
	u, err := url.Parse(proof)
	if err != nil {
		return Identity{}, refuse(Malformed, "the proof is not a URL")
	}
	if u.Scheme != v.endpoint.Scheme || u.Host != v.endpoint.Host || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return Identity{}, refuse(WrongHost, "the proof is not a request to %s://%s", v.endpoint.Scheme, v.endpoint.Host)
	}
	if u.Path != "/" || (u.RawPath != "" && u.RawPath != "/") {
		return Identity{}, refuse(Malformed, "the proof's path is not /")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Identity{}, refuse(Malformed, "the proof's query is not well formed")
	}
	for k, vals := range q {
		if !slices.Contains(allowedQuery, k) {
			return Identity{}, refuse(Malformed, "the proof's query parameter %s is not allowed", strconv.Quote(excerpt.Bytes(k, 40, "...")))
		}
		if len(vals) != 1 {
			return Identity{}, refuse(Malformed, "the proof's query parameter %s appears %d times", k, len(vals))
		}
	}
	switch {
	case q.Get("Action") != stsAction:
		return Identity{}, refuse(Malformed, "the proof is not Action=%s", stsAction)
	case q.Get("Version") != stsVersion:
		return Identity{}, refuse(Malformed, "the proof is not Version=%s", stsVersion)
	case q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
		return Identity{}, refuse(Malformed, "the proof is not signed with AWS4-HMAC-SHA256")
	case q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-Credential") == "":
		return Identity{}, refuse(Malformed, "the proof is not presigned (no X-Amz-Signature or X-Amz-Credential)")
	}
	date, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return Identity{}, refuse(Malformed, "the proof's X-Amz-Date is not YYYYMMDDTHHMMSSZ")
	}
	if date.After(ref.Add(Skew)) {
		return Identity{}, refuse(Stale, "the proof was signed at %s, after %s: sign it when you call", date.Format(time.RFC3339), ref.UTC().Format(time.RFC3339))
	}
	if ref.Sub(date) > Window {
		return Identity{}, refuse(Stale, "the proof was signed at %s, more than %s before %s: sign a new one", date.Format(time.RFC3339), Window, ref.UTC().Format(time.RFC3339))
	}
	if !slices.Contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), strings.ToLower(BindingHeader)) {
		return Identity{}, refuse(Unbound, "the proof does not sign the %s header", BindingHeader)
	}
	sum := sha256.Sum256([]byte(q.Get("X-Amz-Signature")))
	id := hex.EncodeToString(sum[:])
	value := b.Value()
	arn, err := ask(ctx, v.client, u, value)
	if err != nil {
		return Identity{}, err
	}
	// The account first: STS answers for any account's credentials, so
	// nothing else about a principal matters until its account is admitted.
	if account := AccountOf(arn); !slices.Contains(v.accounts, account) {
		v.log.WarnContext(ctx, "caller proof refused: principal of an account this deployment does not admit",
			"reason", string(WrongAccount), "account", excerpt.Bytes(account, 40, "..."), "action", b.Action)
		return Identity{}, refuse(WrongAccount, "the caller %s belongs to AWS account %s, which this deployment does not admit: sign with credentials of the deployment's account", excerpt.Bytes(arn, 200, "..."), excerpt.Bytes(account, 40, "..."))
	}
	ident, err := v.identity(arn)
	if err != nil {
		return Identity{}, err
	}
	rec, fresh, err := v.proofs.Record(ctx, ProofRecord{ID: id, Binding: value, ARN: arn, ExpiresAt: date.Add(Window + Skew + time.Second)})
	if err != nil {
		return Identity{}, &Error{Reason: Unavailable, Message: "the proof table is unavailable", Err: err}
	}
	if !fresh && (rec.Binding != value || rec.ARN != arn) {
		return Identity{}, refuse(Replayed, "this proof was already used for another call: sign a new one for each call")
	}
	return ident, nil
}

// AccountOf is the account field of an ARN
// (arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE), or "" if arn has none:
// the account the verifier compares, and that records naming a principal
// are checked by.
func AccountOf(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return ""
	}
	return parts[4]
}

// ask sends the proof to STS with the binding header and returns the ARN
// STS answers.
func ask(ctx context.Context, client *http.Client, u *url.URL, binding string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", refuse(Malformed, "the proof is not a request")
	}
	req.Header.Set(BindingHeader, binding)
	req.Header.Set("Accept", "text/xml")
	resp, err := client.Do(req)
	if err != nil {
		return "", &Error{Reason: Unavailable, Message: "STS could not be reached", Err: errors.New(redactURL(err.Error(), u))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", &Error{Reason: Unavailable, Message: "STS's answer could not be read", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code string `xml:"Error>Code"`
		}
		_ = xml.Unmarshal(body, &e)
		if resp.StatusCode >= 500 || e.Code == "Throttling" {
			return "", &Error{Reason: Unavailable, Message: fmt.Sprintf("STS answered %d %s", resp.StatusCode, excerpt.Bytes(e.Code, 60, "..."))}
		}
		code := excerpt.Bytes(e.Code, 60, "...")
		if code == "" {
			code = strconv.Itoa(resp.StatusCode)
		}
		return "", refuse(Refused, "STS refused the proof (%s): it was signed for another call, with other keys, or has expired", code)
	}
	var ok struct {
		ARN string `xml:"GetCallerIdentityResult>Arn"`
	}
	if err := xml.Unmarshal(body, &ok); err != nil || ok.ARN == "" {
		return "", &Error{Reason: Unavailable, Message: "STS answered without an identity"}
	}
	return ok.ARN, nil
}

// redactURL removes the proof from a transport error's text.
func redactURL(msg string, u *url.URL) string {
	return strings.ReplaceAll(strings.ReplaceAll(msg, u.String(), u.Scheme+"://"+u.Host+"/?<proof>"), u.RawQuery, "<proof>")
}

// Explain is how a function answers a failed Verify: the message safe to
// show the caller (a refusal's with its reason word), and whether the
// failure was the verifier's own (Unavailable, or an error that is not
// an *Error: STS or the proofs table), which the caller may repeat,
// rather than the proof's.
func Explain(err error) (message string, unavailable bool) {
	var ce *Error
	switch {
	case errors.As(err, &ce) && ce.Reason == Unavailable:
		return ce.Message, true
	case errors.As(err, &ce):
		return ce.Message + " [" + string(ce.Reason) + "]", false
	}
	return "the caller could not be verified", true
}
