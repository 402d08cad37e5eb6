package local

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/toolgate/toolgate/shared/localkeys"
)

const (
	// LocalAccountID is the local stack's account (localkeys.AccountID).
	LocalAccountID = localkeys.AccountID

	// STS's own limits on a presigned GetCallerIdentity: it honours one for
	// at most 15 minutes whatever X-Amz-Expires says, and for at most 5
	// minutes of clock skew into the future.
	stsMaxAge  = 15 * time.Minute
	stsMaxSkew = 5 * time.Minute
	// A header-signed request is honoured while its X-Amz-Date is within
	// 15 minutes of STS's clock either way (SigV4's "Signature expired").
	stsSignedSkew = 15 * time.Minute
	stsMaxURL     = 8 << 10  // bytes of request target
	stsMaxBody    = 16 << 10 // bytes of a POST's form body
	stsAmzDate    = "20060102T150405Z"
	emptySHA256   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // SHA-256 of no body
)

// AssumeRole's DurationSeconds: 900 seconds to 12 hours, 3600 when the
// request gives none (STS API Reference, AssumeRole). The stand-in has no
// per-role MaxSessionDuration; it honours the whole range.
const (
	MinSessionSeconds     = 900
	MaxSessionSeconds     = 43200
	defaultSessionSeconds = 3600
)

// LocalKeys are the local identities' keys (localkeys.Keys), which the
// STS stand-in checks signatures with.
type LocalKeys = localkeys.Keys

// NewLocalKeys returns keys from a fresh random seed (localkeys.New).
func NewLocalKeys() (*LocalKeys, error) { return localkeys.New() }

// LocalPrincipal is the ARN the STS stand-in answers for name
// (localkeys.Principal).
func LocalPrincipal(name string) string { return localkeys.Principal(name) }

// PrincipalIn is the ARN the STS stand-in answers for name in account
// (localkeys.PrincipalIn).
func PrincipalIn(account, name string) string { return localkeys.PrincipalIn(account, name) }

// STS is an in-process stand-in for two STS actions, GetCallerIdentity and
// AssumeRole, which it answers with STS's XML (Version 2011-06-15).
//
// GetCallerIdentity comes as GET / with the query of a SigV4-presigned
// request (each parameter once, no others), signed for service "sts" with
// the empty-body payload hash: the caller proof (docs/identity.md). It also
// comes as a header-signed POST, as the SDK's client sends it. The answer
// names the signer: PrincipalIn(account, name) for one of its LocalKeys'
// identities, in the local account or any other (CredentialsIn), or
// arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION for a session it issued.
// A presigned signature is checked by presigning the request again with the
// SDK's signer over exactly the headers X-Amz-SignedHeaders names (host among
// them).
//
// AssumeRole comes as POST / with a form body (Action, Version, RoleArn,
// RoleSessionName, DurationSeconds 900 to 43200, default 3600: the STS API
// Reference's bounds) and an Authorization header, SigV4 over the body's
// SHA-256, checked by signing the request again with the SDK's signer over
// the headers SignedHeaders names (host and X-Amz-Date among them). Only a
// local identity of the local account that Trust names for the role may
// assume a role of the local account. The answer's credentials are the
// stand-in's own: an ASIA access key ID, a secret and a session token,
// derived under a per-stand-in random key and kept in a map until they
// expire, so that a later request signed with them answers as the session.
//
// Everything else gets STS's ErrorResponse XML (Type Sender): 400
// InvalidQueryParameter, MissingParameter, InvalidAction,
// InvalidParameterValue, IncompleteSignature or ValidationError for a
// malformed request; 403 MissingAuthenticationToken for a POST without an
// Authorization header; 403 InvalidClientTokenId for an access key ID that is
// neither a local identity's nor a live session's, for a session token on a
// local identity's key, or for a session key without its own token; 403
// ExpiredToken for a session past its expiry, or a presigned X-Amz-Date over
// 15 minutes old (STS's own limit, whatever X-Amz-Expires says) or past
// X-Amz-Expires; 403 SignatureDoesNotMatch for a presigned date over 5
// minutes ahead, a header-signed date over 15 minutes either way, unsigned
// host, signed headers not the ones sent, or a wrong signature; 403
// AccessDenied for an AssumeRole that the trust table does not allow. A
// request target over 8 KiB gets 414, a body over 16 KiB 413, another method
// 405 and another path 404 (the stand-in's own). No message repeats a
// signature, a secret or a token.
type STS struct {
	// Now is the stand-in's clock (default time.Now); tests set it before the
	// first request.
	Now  func() time.Time
	keys *LocalKeys
	srv  *http.Server
	addr string
	// sessionKey keys the digests session credentials are derived with.
	sessionKey []byte

	mu       sync.Mutex
	trust    map[string][]string    // role name -> local identities that may assume it
	sessions map[string]*stsSession // session access key ID -> session
}

// stsSession is one set of credentials AssumeRole issued.
type stsSession struct {
	account, role, name string
	expires             time.Time
	secret, token       string
}

// stsCaller is who signed a request: a local identity (user) or a session.
type stsCaller struct {
	account, user, akid string
	session             *stsSession
}

// StartSTS serves the stand-in on a free 127.0.0.1 port.
func StartSTS(keys *LocalKeys) (*STS, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("local: sts: session key: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: sts: %w", err)
	}
	s := &STS{Now: time.Now, keys: keys, addr: l.Addr().String(), sessionKey: key,
		trust: map[string][]string{}, sessions: map[string]*stsSession{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 * stsMaxURL}
	go s.srv.Serve(l)
	return s, nil
}

// Endpoint is the stand-in's base URL, "http://127.0.0.1:PORT".
func (s *STS) Endpoint() string { return "http://" + s.addr }

// Close stops the stand-in.
func (s *STS) Close() error { return s.srv.Close() }

// Trust lets the local identities callers (names that pass
// localkeys.ValidName, of the local account) assume the role named role in
// the local account, arn:aws:iam::000000000000:role/ROLE: the role's trust
// policy. Trusting again adds callers; nobody may assume a role Trust never
// named. role must be an IAM role name, 1 to 64 of [\w+=,.@-] (IAM
// quotas, "IAM name requirements").
func (s *STS) Trust(role string, callers ...string) error {
	if !roleNamePattern.MatchString(role) {
		return fmt.Errorf("local: sts: trust: role name %q is not 1 to 64 of [\\w+=,.@-]", role)
	}
	for _, c := range callers {
		if err := localkeys.ValidName(c); err != nil {
			return fmt.Errorf("local: sts: trust %s: %w", role, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range callers {
		if !slices.Contains(s.trust[role], c) {
			s.trust[role] = append(s.trust[role], c)
		}
	}
	return nil
}

// stsRefusal is one error answer; Type is always Sender.
type stsRefusal struct {
	status        int
	code, message string
}

var (
	allowedSTSQuery = []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
		"X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"}
	allowedForm = map[string][]string{
		"GetCallerIdentity": {"Action", "Version"},
		"AssumeRole":        {"Action", "Version", "RoleArn", "RoleSessionName", "DurationSeconds"},
	}
	errBadSignature = &stsRefusal{403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."}
	errBadKey       = &stsRefusal{403, "InvalidClientTokenId", "The security token included in the request is invalid."}
	errExpiredToken = &stsRefusal{403, "ExpiredToken", "The security token included in the request is expired"}

	// sessionNamePattern is AssumeRole's RoleSessionName: 2 to 64 of
	// [\w+=,.@-] (STS API Reference, AssumeRole).
	sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	// roleNamePattern is an IAM role name (IAM quotas).
	roleNamePattern = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)
	// roleARNPattern is an IAM role ARN in the aws partition, with an
	// optional path; STS's assumed-role ARN leaves the path out.
	roleARNPattern = regexp.MustCompile(`^arn:aws:iam::([0-9]{12}):role/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,64})$`)
	authPattern    = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$`)
	sessionKeyEnc  = base32.StdEncoding.WithPadding(base32.NoPadding)
)

func malformed(code, format string, a ...any) *stsRefusal {
	return &stsRefusal{http.StatusBadRequest, code, fmt.Sprintf(format, a...)}
}

// invalid is a ValidationError naming the member (STS's words) without
// its value.
func invalid(member, constraint string) *stsRefusal {
	return malformed("ValidationError", "1 validation error detected: Value at '%s' failed to satisfy constraint: %s", member, constraint)
}

// ServeHTTP answers one request (see STS).
func (s *STS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var answer any
	var refusal *stsRefusal
	switch {
	case len(r.RequestURI) > stsMaxURL:
		refusal = &stsRefusal{http.StatusRequestURITooLong, "InvalidQueryParameter", "The request URL is too long."}
	case r.Method != http.MethodGet && r.Method != http.MethodPost:
		refusal = &stsRefusal{http.StatusMethodNotAllowed, "InvalidAction", "Only a presigned GET or a signed POST is answered."}
	case r.URL.Path != "/":
		refusal = &stsRefusal{http.StatusNotFound, "InvalidAction", "The path must be /."}
	case r.Method == http.MethodGet:
		answer, refusal = s.presigned(r)
	default:
		answer, refusal = s.signed(r)
	}
	if refusal != nil {
		answer = struct {
			XMLName   xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ ErrorResponse"`
			Type      string   `xml:"Error>Type"`
			Code      string   `xml:"Error>Code"`
			Message   string   `xml:"Error>Message"`
			RequestID string   `xml:"RequestId"`
		}{Type: "Sender", Code: refusal.code, Message: refusal.message, RequestID: requestID()}
	}
	out, err := xml.Marshal(answer)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	if refusal != nil {
		w.WriteHeader(refusal.status)
	}
	w.Write(out)
}

// presigned answers a presigned GetCallerIdentity GET, or says why it is
// refused.
func (s *STS) presigned(r *http.Request) (any, *stsRefusal) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, malformed("InvalidQueryParameter", "The query string is malformed.")
	}
	if refusal := onlyOnce(q, allowedSTSQuery); refusal != nil {
		return nil, refusal
	}
	for _, k := range []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		if q.Get(k) == "" {
			return nil, malformed("MissingParameter", "The request must contain the parameter %s.", k)
		}
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/")
	date, dateErr := time.Parse(stsAmzDate, q.Get("X-Amz-Date"))
	expires, expiresErr := strconv.Atoi(q.Get("X-Amz-Expires"))
	switch {
	case q.Get("Action") != "GetCallerIdentity":
		return nil, malformed("InvalidAction", "Only GetCallerIdentity is answered to a GET.")
	case q.Get("Version") != "2011-06-15":
		return nil, malformed("InvalidParameterValue", "Version must be 2011-06-15.")
	case q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
		return nil, malformed("InvalidParameterValue", "X-Amz-Algorithm must be AWS4-HMAC-SHA256.")
	case len(scope) != 5 || scope[2] == "" || scope[3] != "sts" || scope[4] != "aws4_request":
		return nil, malformed("InvalidParameterValue", "X-Amz-Credential must be AKID/YYYYMMDD/REGION/sts/aws4_request.")
	case dateErr != nil:
		return nil, malformed("InvalidParameterValue", "X-Amz-Date must be YYYYMMDDTHHMMSSZ.")
	case q.Has("X-Amz-Expires") && (expiresErr != nil || expires < 1 || expires > 604800):
		return nil, malformed("InvalidParameterValue", "X-Amz-Expires must be 1 to 604800 seconds.")
	}
	who, creds, refusal := s.credentials(scope[0], q.Get("X-Amz-Security-Token"), q.Has("X-Amz-Security-Token"))
	if refusal != nil {
		return nil, refusal
	}
	now := s.Now()
	if now.Sub(date) > stsMaxAge || (q.Has("X-Amz-Expires") && now.After(date.Add(time.Duration(expires)*time.Second))) {
		return nil, &stsRefusal{403, "ExpiredToken", "Request has expired."}
	}
	if date.Sub(now) > stsMaxSkew {
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "Signature not yet current."}
	}
	if !slices.Contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), "host") {
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "The host header must be signed."}
	}
	if refusal := verifySignature(r, q, creds, scope[2], date); refusal != nil {
		return nil, refusal
	}
	return s.callerIdentity(who), nil
}

// signed answers a header-signed POST (GetCallerIdentity or AssumeRole),
// or says why it is refused.
func (s *STS) signed(r *http.Request) (any, *stsRefusal) {
	if r.URL.RawQuery != "" {
		return nil, malformed("InvalidQueryParameter", "A signed POST carries its parameters in the form body, not the query.")
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return nil, &stsRefusal{403, "MissingAuthenticationToken", "Request is missing Authentication Token"}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, malformed("InvalidParameterValue", "The body must be application/x-www-form-urlencoded.")
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, stsMaxBody))
	if err != nil {
		return nil, &stsRefusal{http.StatusRequestEntityTooLarge, "InvalidParameterValue", "The request body is over 16 KiB."}
	}
	m := authPattern.FindStringSubmatch(auth)
	if m == nil {
		return nil, malformed("IncompleteSignature", "The Authorization header must be AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=<64 hex digits>.")
	}
	credential, signedHeaders := m[1], strings.Split(m[2], ";")
	date, err := time.Parse(stsAmzDate, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return nil, malformed("IncompleteSignature", "The request must carry an X-Amz-Date header of the form YYYYMMDDTHHMMSSZ.")
	}
	scope := strings.Split(credential, "/")
	switch {
	case len(scope) != 5 || scope[2] == "" || scope[4] != "aws4_request":
		return nil, malformed("IncompleteSignature", "The Credential must be AKID/YYYYMMDD/REGION/sts/aws4_request.")
	case scope[3] != "sts":
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "Credential should be scoped to correct service: 'sts'."}
	case scope[1] != date.Format("20060102"):
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "Date in Credential scope does not match YYYYMMDD from X-Amz-Date."}
	case !slices.Contains(signedHeaders, "host") || !slices.Contains(signedHeaders, "x-amz-date"):
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "The host and X-Amz-Date headers must be signed."}
	}
	token, hasToken := r.Header.Get("X-Amz-Security-Token"), len(r.Header.Values("X-Amz-Security-Token")) > 0
	who, creds, refusal := s.credentials(scope[0], token, hasToken)
	if refusal != nil {
		return nil, refusal
	}
	now := s.Now()
	if now.Sub(date) > stsSignedSkew {
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "Signature expired: the request was signed over 15 minutes ago."}
	}
	if date.Sub(now) > stsSignedSkew {
		return nil, &stsRefusal{403, "SignatureDoesNotMatch", "Signature not yet current: the request was signed over 15 minutes ahead."}
	}
	if refusal := verifyHeaderSignature(r, body, m[2], m[3], creds, scope[2], date); refusal != nil {
		return nil, refusal
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, malformed("InvalidQueryParameter", "The form body is malformed.")
	}
	allowed, ok := allowedForm[form.Get("Action")]
	if !ok {
		return nil, malformed("InvalidAction", "Only GetCallerIdentity and AssumeRole are answered.")
	}
	if refusal := onlyOnce(form, allowed); refusal != nil {
		return nil, refusal
	}
	if form.Get("Version") != "2011-06-15" {
		return nil, malformed("InvalidParameterValue", "Version must be 2011-06-15.")
	}
	if form.Get("Action") == "GetCallerIdentity" {
		return s.callerIdentity(who), nil
	}
	return s.assumeRole(who, form)
}

// onlyOnce refuses a parameter outside allowed or given more than once.
func onlyOnce(q url.Values, allowed []string) *stsRefusal {
	for k, v := range q {
		if !slices.Contains(allowed, k) || len(v) != 1 {
			return malformed("InvalidQueryParameter", "Query parameter %s is unknown or repeated.", strconv.QuoteToASCII(k[:min(len(k), 64)]))
		}
	}
	return nil
}

// credentials returns who akid stands for and the credentials to sign
// again with: a live session's, which must come with its own token, or a
// local identity's, which must come with none.
func (s *STS) credentials(akid, token string, hasToken bool) (stsCaller, aws.Credentials, *stsRefusal) {
	s.mu.Lock()
	sess := s.sessions[akid]
	s.mu.Unlock()
	if sess != nil {
		if subtle.ConstantTimeCompare([]byte(token), []byte(sess.token)) != 1 {
			return stsCaller{}, aws.Credentials{}, errBadKey
		}
		if !s.Now().Before(sess.expires) {
			return stsCaller{}, aws.Credentials{}, errExpiredToken
		}
		return stsCaller{account: sess.account, akid: akid, session: sess},
			aws.Credentials{AccessKeyID: akid, SecretAccessKey: sess.secret, SessionToken: sess.token}, nil
	}
	account, name := localkeys.Identity(akid)
	creds, err := s.keys.CredentialsIn(account, name)
	if err != nil || hasToken { // local identities have no session tokens
		return stsCaller{}, aws.Credentials{}, errBadKey
	}
	return stsCaller{account: account, user: name, akid: akid}, creds, nil
}

// arn is the caller as STS answers it.
func (c stsCaller) arn() string {
	if c.session != nil {
		return "arn:aws:sts::" + c.account + ":assumed-role/" + c.session.role + "/" + c.session.name
	}
	return PrincipalIn(c.account, c.user)
}

// callerIdentity is GetCallerIdentity's answer for who.
func (s *STS) callerIdentity(who stsCaller) any {
	userID := who.akid
	if who.session != nil {
		userID = s.assumedRoleID(who.account, who.session.role, who.session.name)
	}
	return struct {
		XMLName   xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ GetCallerIdentityResponse"`
		Arn       string   `xml:"GetCallerIdentityResult>Arn"`
		UserID    string   `xml:"GetCallerIdentityResult>UserId"`
		Account   string   `xml:"GetCallerIdentityResult>Account"`
		RequestID string   `xml:"ResponseMetadata>RequestId"`
	}{Arn: who.arn(), UserID: userID, Account: who.account, RequestID: requestID()}
}

// assumeRole checks an AssumeRole form against the trust table and issues
// a session.
func (s *STS) assumeRole(who stsCaller, form url.Values) (any, *stsRefusal) {
	roleARN, session := form.Get("RoleArn"), form.Get("RoleSessionName")
	switch {
	case roleARN == "":
		return nil, invalid("roleArn", "Member must not be null")
	case session == "":
		return nil, invalid("roleSessionName", "Member must not be null")
	case len(roleARN) < 20 || len(roleARN) > 2048:
		return nil, invalid("roleArn", "Member must have length between 20 and 2048")
	case !sessionNamePattern.MatchString(session):
		return nil, invalid("roleSessionName", `Member must have length between 2 and 64 and satisfy regular expression pattern: [\w+=,.@-]*`)
	}
	seconds := defaultSessionSeconds
	if form.Has("DurationSeconds") {
		n, err := strconv.Atoi(form.Get("DurationSeconds"))
		if err != nil || n < MinSessionSeconds || n > MaxSessionSeconds {
			return nil, invalid("durationSeconds", "Member must have value between 900 and 43200")
		}
		seconds = n
	}
	m := roleARNPattern.FindStringSubmatch(roleARN)
	if m == nil {
		return nil, invalid("roleArn", "Member must be an IAM role ARN, arn:aws:iam::ACCOUNT:role/NAME")
	}
	account, role := m[1], m[2]
	s.mu.Lock()
	trusted := slices.Contains(s.trust[role], who.user)
	s.mu.Unlock()
	// Only a local identity of the local account assumes a role, and only
	// one of the local account's roles: the trust table names no other
	// account's principals, and no session (no role chaining).
	if who.session != nil || who.account != LocalAccountID || account != LocalAccountID || !trusted {
		return nil, &stsRefusal{403, "AccessDenied", fmt.Sprintf("User: %s is not authorized to perform: sts:AssumeRole on resource: %s", who.arn(), roleARN)}
	}
	sess, err := s.issue(account, role, session, s.Now().Add(time.Duration(seconds)*time.Second))
	if err != nil {
		return nil, &stsRefusal{http.StatusInternalServerError, "InternalFailure", "The session could not be issued."}
	}
	return struct {
		XMLName         xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleResponse"`
		AccessKeyID     string   `xml:"AssumeRoleResult>Credentials>AccessKeyId"`
		SecretAccessKey string   `xml:"AssumeRoleResult>Credentials>SecretAccessKey"`
		SessionToken    string   `xml:"AssumeRoleResult>Credentials>SessionToken"`
		Expiration      string   `xml:"AssumeRoleResult>Credentials>Expiration"`
		Arn             string   `xml:"AssumeRoleResult>AssumedRoleUser>Arn"`
		AssumedRoleID   string   `xml:"AssumeRoleResult>AssumedRoleUser>AssumedRoleId"`
		RequestID       string   `xml:"ResponseMetadata>RequestId"`
	}{
		AccessKeyID: sess.akid, SecretAccessKey: sess.secret, SessionToken: sess.token,
		Expiration: sess.expires.UTC().Format(time.RFC3339),
		Arn:        stsCaller{account: account, session: sess.stsSession}.arn(), AssumedRoleID: s.assumedRoleID(account, role, session),
		RequestID: requestID(),
	}, nil
}

// issued is a session and its access key ID.
type issued struct {
	*stsSession
	akid string
}

// issue mints session credentials that expire at expires (whole seconds):
// an access key ID "ASIA" and 16 base32 characters of a keyed digest of
// the session and a random nonce, and a secret and a token that are keyed
// digests of that ID. It forgets sessions that have expired.
func (s *STS) issue(account, role, name string, expires time.Time) (issued, error) {
	expires = expires.UTC().Truncate(time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	for k, sess := range s.sessions {
		if !now.Before(sess.expires) {
			delete(s.sessions, k)
		}
	}
	for {
		nonce := make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return issued{}, err
		}
		id := s.digest("session-key-id", account, role, name, expires.Format(time.RFC3339), hex.EncodeToString(nonce))
		akid := "ASIA" + sessionKeyEnc.EncodeToString(id)[:16]
		if s.sessions[akid] != nil {
			continue
		}
		sess := &stsSession{account: account, role: role, name: name, expires: expires,
			secret: base64.StdEncoding.EncodeToString(s.digest("session-secret", akid)[:30]),
			token:  base64.StdEncoding.EncodeToString(append(s.digest("session-token", akid), s.digest("session-token-2", akid)...))}
		s.sessions[akid] = sess
		return issued{sess, akid}, nil
	}
}

// assumedRoleID is AssumedRoleId: the role's unique ID ("AROA" and 17
// base32 characters of a keyed digest of the role), a colon and the
// session name.
func (s *STS) assumedRoleID(account, role, session string) string {
	return "AROA" + sessionKeyEnc.EncodeToString(s.digest("role-id", account, role))[:17] + ":" + session
}

// digest is HMAC-SHA256 under the stand-in's session key of the parts,
// each ended by a NUL byte.
func (s *STS) digest(parts ...string) []byte {
	mac := hmac.New(sha256.New, s.sessionKey)
	for _, p := range parts {
		mac.Write([]byte(p))
		mac.Write([]byte{0})
	}
	return mac.Sum(nil)
}

// verifySignature presigns the same request again with the SDK's signer and
// creds, copying exactly the headers the request says it signs,
// and compares the signed-header list and the signature with the ones sent.
func verifySignature(r *http.Request, q url.Values, creds aws.Credentials, region string, date time.Time) *stsRefusal {
	q = maps.Clone(q)
	presented := q.Get("X-Amz-Signature")
	q.Del("X-Amz-Signature")
	again := &url.URL{Scheme: "http", Host: r.Host, Path: "/", RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, again.String(), nil)
	if err != nil {
		return errBadSignature
	}
	for _, h := range strings.Split(q.Get("X-Amz-SignedHeaders"), ";") {
		if h != "host" {
			for _, v := range r.Header.Values(h) {
				req.Header.Add(h, v)
			}
		}
	}
	signed, _, err := v4.NewSigner().PresignHTTP(r.Context(), creds, req, emptySHA256, "sts", region, date)
	if err != nil {
		return errBadSignature
	}
	su, err := url.Parse(signed)
	if err != nil {
		return errBadSignature
	}
	if su.Query().Get("X-Amz-SignedHeaders") != q.Get("X-Amz-SignedHeaders") {
		return &stsRefusal{403, "SignatureDoesNotMatch", "The signed headers are not the headers sent."}
	}
	if subtle.ConstantTimeCompare([]byte(su.Query().Get("X-Amz-Signature")), []byte(presented)) != 1 {
		return errBadSignature
	}
	return nil
}

// verifyHeaderSignature signs the same POST again with the SDK's signer
// and creds over body's SHA-256, copying exactly the headers signedHeaders
// names (host from the request's Host, content-length from the body), and
// compares the signed-header list and the signature with the ones sent.
func verifyHeaderSignature(r *http.Request, body []byte, signedHeaders, presented string, creds aws.Credentials, region string, date time.Time) *stsRefusal {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://"+r.Host+"/", nil)
	if err != nil {
		return errBadSignature
	}
	for _, h := range strings.Split(signedHeaders, ";") {
		switch h {
		case "host":
		case "content-length":
			req.ContentLength = int64(len(body))
		default:
			for _, v := range r.Header.Values(h) {
				req.Header.Add(h, v)
			}
		}
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, req, hex.EncodeToString(sum[:]), "sts", region, date); err != nil {
		return errBadSignature
	}
	m := authPattern.FindStringSubmatch(req.Header.Get("Authorization"))
	if m == nil {
		return errBadSignature
	}
	if m[2] != signedHeaders {
		return &stsRefusal{403, "SignatureDoesNotMatch", "The signed headers are not the headers sent."}
	}
	if subtle.ConstantTimeCompare([]byte(m[3]), []byte(presented)) != 1 {
		return errBadSignature
	}
	return nil
}

// requestID is a random UUID (version 4).
func requestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
