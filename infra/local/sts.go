package local

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	stsMaxAge   = 15 * time.Minute
	stsMaxSkew  = 5 * time.Minute
	stsMaxURL   = 8 << 10 // bytes of request target
	stsAmzDate  = "20060102T150405Z"
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // SHA-256 of no body
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

// STS is an in-process stand-in for sts:GetCallerIdentity. It answers only
// GET / with the query of a SigV4-presigned GetCallerIdentity (Version
// 2011-06-15, each parameter once, no others) signed for service "sts" with
// the empty-body payload hash by one of its LocalKeys' identities, in the
// local account or any other (CredentialsIn): 200 and STS's XML with
// PrincipalIn(account, name), the access key ID and the account.
// The signature is checked by presigning the request again with the SDK's
// signer over exactly the headers X-Amz-SignedHeaders names (host among them).
//
// Everything else gets STS's ErrorResponse XML (Type Sender): 400
// InvalidQueryParameter, MissingParameter, InvalidAction or
// InvalidParameterValue for a malformed request; 403 InvalidClientTokenId for
// an access key ID that is not a local identity's or a session token; 403
// ExpiredToken for X-Amz-Date over 15 minutes old (STS's own limit, whatever
// X-Amz-Expires says) or past X-Amz-Expires; 403 SignatureDoesNotMatch for a
// date over 5 minutes ahead, unsigned host, signed headers not the ones sent,
// or a wrong signature. A request target over 8 KiB gets 414, another method
// 405 and another path 404 (the stand-in's own; STS takes POST too).
// No body is read; no message repeats the signature.
type STS struct {
	// Now is the stand-in's clock (default time.Now); tests set it before the
	// first request.
	Now  func() time.Time
	keys *LocalKeys
	srv  *http.Server
	addr string
}

// StartSTS serves the stand-in on a free 127.0.0.1 port.
func StartSTS(keys *LocalKeys) (*STS, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: sts: %w", err)
	}
	s := &STS{Now: time.Now, keys: keys, addr: l.Addr().String()}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 * stsMaxURL}
	go s.srv.Serve(l)
	return s, nil
}

// Endpoint is the stand-in's base URL, "http://127.0.0.1:PORT".
func (s *STS) Endpoint() string { return "http://" + s.addr }

// Close stops the stand-in.
func (s *STS) Close() error { return s.srv.Close() }

// stsRefusal is one error answer; Type is always Sender.
type stsRefusal struct {
	status        int
	code, message string
}

var (
	allowedSTSQuery = []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
		"X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"}
	errBadSignature = &stsRefusal{403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."}
	errBadKey       = &stsRefusal{403, "InvalidClientTokenId", "The security token included in the request is invalid."}
)

func malformed(code, format string, a ...any) *stsRefusal {
	return &stsRefusal{http.StatusBadRequest, code, fmt.Sprintf(format, a...)}
}

// ServeHTTP answers one request (see STS).
func (s *STS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body any
	account, name, akid, refusal := s.check(r)
	if refusal != nil {
		body = struct {
			XMLName   xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ ErrorResponse"`
			Type      string   `xml:"Error>Type"`
			Code      string   `xml:"Error>Code"`
			Message   string   `xml:"Error>Message"`
			RequestID string   `xml:"RequestId"`
		}{Type: "Sender", Code: refusal.code, Message: refusal.message, RequestID: requestID()}
	} else {
		body = struct {
			XMLName   xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ GetCallerIdentityResponse"`
			Arn       string   `xml:"GetCallerIdentityResult>Arn"`
			UserID    string   `xml:"GetCallerIdentityResult>UserId"`
			Account   string   `xml:"GetCallerIdentityResult>Account"`
			RequestID string   `xml:"ResponseMetadata>RequestId"`
		}{Arn: PrincipalIn(account, name), UserID: akid, Account: account, RequestID: requestID()}
	}
	out, err := xml.Marshal(body)
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

// check returns the caller's account, name and access key ID, or why it is
// refused.
func (s *STS) check(r *http.Request) (account, name, akid string, _ *stsRefusal) {
	switch {
	case len(r.RequestURI) > stsMaxURL:
		return "", "", "", &stsRefusal{http.StatusRequestURITooLong, "InvalidQueryParameter", "The request URL is too long."}
	case r.Method != http.MethodGet:
		return "", "", "", &stsRefusal{http.StatusMethodNotAllowed, "InvalidAction", "Only a presigned GET is answered."}
	case r.URL.Path != "/":
		return "", "", "", &stsRefusal{http.StatusNotFound, "InvalidAction", "The path must be /."}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", "", "", malformed("InvalidQueryParameter", "The query string is malformed.")
	}
	for k, v := range q {
		if !slices.Contains(allowedSTSQuery, k) || len(v) != 1 {
			return "", "", "", malformed("InvalidQueryParameter", "Query parameter %s is unknown or repeated.", strconv.QuoteToASCII(k[:min(len(k), 64)]))
		}
	}
	for _, k := range []string{"Action", "Version", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		if q.Get(k) == "" {
			return "", "", "", malformed("MissingParameter", "The request must contain the parameter %s.", k)
		}
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/")
	date, dateErr := time.Parse(stsAmzDate, q.Get("X-Amz-Date"))
	expires, expiresErr := strconv.Atoi(q.Get("X-Amz-Expires"))
	switch {
	case q.Get("Action") != "GetCallerIdentity":
		return "", "", "", malformed("InvalidAction", "Only GetCallerIdentity is answered.")
	case q.Get("Version") != "2011-06-15":
		return "", "", "", malformed("InvalidParameterValue", "Version must be 2011-06-15.")
	case q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
		return "", "", "", malformed("InvalidParameterValue", "X-Amz-Algorithm must be AWS4-HMAC-SHA256.")
	case len(scope) != 5 || scope[2] == "" || scope[3] != "sts" || scope[4] != "aws4_request":
		return "", "", "", malformed("InvalidParameterValue", "X-Amz-Credential must be AKID/YYYYMMDD/REGION/sts/aws4_request.")
	case dateErr != nil:
		return "", "", "", malformed("InvalidParameterValue", "X-Amz-Date must be YYYYMMDDTHHMMSSZ.")
	case q.Has("X-Amz-Expires") && (expiresErr != nil || expires < 1 || expires > 604800):
		return "", "", "", malformed("InvalidParameterValue", "X-Amz-Expires must be 1 to 604800 seconds.")
	}
	akid = scope[0]
	account, name = localkeys.Identity(akid)
	creds, err := s.keys.CredentialsIn(account, name)
	if err != nil || q.Has("X-Amz-Security-Token") { // local identities have no session tokens
		return "", "", "", errBadKey
	}
	now := s.Now()
	if now.Sub(date) > stsMaxAge || (q.Has("X-Amz-Expires") && now.After(date.Add(time.Duration(expires)*time.Second))) {
		return "", "", "", &stsRefusal{403, "ExpiredToken", "Request has expired."}
	}
	if date.Sub(now) > stsMaxSkew {
		return "", "", "", &stsRefusal{403, "SignatureDoesNotMatch", "Signature not yet current."}
	}
	if !slices.Contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), "host") {
		return "", "", "", &stsRefusal{403, "SignatureDoesNotMatch", "The host header must be signed."}
	}
	if refusal := verifySignature(r, q, creds, scope[2], date); refusal != nil {
		return "", "", "", refusal
	}
	return account, name, akid, nil
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

// requestID is a random UUID (version 4).
func requestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
