package local_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
)

const (
	inboundRole    = "toolgate-local-inbound-start"
	inboundRoleARN = "arn:aws:iam::000000000000:role/" + inboundRole
	inboundStarter = "inbound-start" // the local identity the consumer function runs as
)

// stsClock is the stand-in's clock, moved by the test between requests.
type stsClock struct{ at atomic.Int64 }

func (c *stsClock) now() time.Time      { return time.Unix(0, c.at.Load()).UTC() }
func (c *stsClock) set(t time.Time)     { c.at.Store(t.UnixNano()) }
func (c *stsClock) add(d time.Duration) { c.at.Add(int64(d)) }
func newSTSClock(t time.Time) *stsClock { c := &stsClock{}; c.set(t); return c }
func staticCreds(c aws.Credentials) aws.CredentialsProvider {
	return credentials.StaticCredentialsProvider{Value: c}
}

// trustedSTS is a stand-in on clock whose inbound-start role the local
// identity inbound-start may assume.
func trustedSTS(t *testing.T, keys *local.LocalKeys, clock *stsClock) *local.STS {
	t.Helper()
	s, err := local.StartSTS(keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Now = clock.now
	if err := s.Trust(inboundRole, inboundStarter); err != nil {
		t.Fatal(err)
	}
	return s
}

// stsClient is the SDK's STS client for s, signing with creds.
func stsClient(s *local.STS, creds aws.Credentials) *sts.Client {
	return sts.New(sts.Options{Region: local.Region, BaseEndpoint: aws.String(s.Endpoint()),
		Credentials: staticCreds(creds), RetryMaxAttempts: 1})
}

func assumeInbound(t *testing.T, s *local.STS, creds aws.Credentials, session string, seconds int32) aws.Credentials {
	t.Helper()
	out, err := stsClient(s, creds).AssumeRole(context.Background(), &sts.AssumeRoleInput{
		RoleArn: aws.String(inboundRoleARN), RoleSessionName: aws.String(session), DurationSeconds: aws.Int32(seconds)})
	if err != nil {
		t.Fatalf("AssumeRole: %v", err)
	}
	c := out.Credentials
	return aws.Credentials{AccessKeyID: *c.AccessKeyId, SecretAccessKey: *c.SecretAccessKey, SessionToken: *c.SessionToken}
}

// apiError is the code and HTTP status of an SDK error.
func apiError(t *testing.T, err error) (string, int) {
	t.Helper()
	var api smithy.APIError
	var resp *awshttp.ResponseError
	if !errors.As(err, &api) || !errors.As(err, &resp) {
		t.Fatalf("error %v is not an STS answer", err)
	}
	return api.ErrorCode(), resp.HTTPStatusCode()
}

func TestSTSAssumeRoleIssuesSessionThatAnswersAsTheAssumedRole(t *testing.T) {
	keys := newKeys(t)
	now := time.Now().UTC().Truncate(time.Second)
	s := trustedSTS(t, keys, newSTSClock(now))
	starter := localCreds(t, keys, inboundStarter)

	out, err := stsClient(s, starter).AssumeRole(context.Background(), &sts.AssumeRoleInput{
		RoleArn: aws.String(inboundRoleARN), RoleSessionName: aws.String("src-billing"), DurationSeconds: aws.Int32(900)})
	if err != nil {
		t.Fatalf("AssumeRole by a trusted identity: %v", err)
	}
	wantARN := "arn:aws:sts::000000000000:assumed-role/" + inboundRole + "/src-billing"
	if got := aws.ToString(out.AssumedRoleUser.Arn); got != wantARN {
		t.Errorf("AssumedRoleUser.Arn = %q, want %q", got, wantARN)
	}
	if id := aws.ToString(out.AssumedRoleUser.AssumedRoleId); !strings.HasPrefix(id, "AROA") || !strings.HasSuffix(id, ":src-billing") || len(id) != 21+len(":src-billing") {
		t.Errorf("AssumedRoleId = %q, want AROA, 17 characters, :src-billing", id)
	}
	c := out.Credentials
	if got, want := aws.ToTime(c.Expiration), now.Add(900*time.Second); !got.Equal(want) {
		t.Errorf("Expiration = %s, want %s (DurationSeconds after the stand-in's now)", got, want)
	}
	if akid := aws.ToString(c.AccessKeyId); !strings.HasPrefix(akid, "ASIA") || len(akid) != 20 {
		t.Errorf("AccessKeyId = %q, want ASIA and 16 characters", akid)
	}
	if aws.ToString(c.SecretAccessKey) == "" || aws.ToString(c.SessionToken) == "" {
		t.Fatal("no secret or session token")
	}
	session := aws.Credentials{AccessKeyID: *c.AccessKeyId, SecretAccessKey: *c.SecretAccessKey, SessionToken: *c.SessionToken}

	// The SDK's GetCallerIdentity (a header-signed POST) answers the
	// session for the session's credentials, and the user for the user's.
	for _, tc := range []struct {
		creds   aws.Credentials
		wantARN string
	}{{session, wantARN}, {starter, "arn:aws:iam::000000000000:user/" + inboundStarter}} {
		who, err := stsClient(s, tc.creds).GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{})
		if err != nil {
			t.Fatalf("GetCallerIdentity: %v", err)
		}
		if aws.ToString(who.Arn) != tc.wantARN || aws.ToString(who.Account) != local.LocalAccountID {
			t.Errorf("GetCallerIdentity = %s in %s, want %s in %s", aws.ToString(who.Arn), aws.ToString(who.Account), tc.wantARN, local.LocalAccountID)
		}
	}
	// Two sessions get distinct credentials.
	other := assumeInbound(t, s, starter, "src-billing", 900)
	if other.AccessKeyID == session.AccessKeyID || other.SecretAccessKey == session.SecretAccessKey || other.SessionToken == session.SessionToken {
		t.Error("a second AssumeRole issued the first session's credentials again")
	}
}

// memProofs is an in-memory proof table with ledger.ProofTable's semantics
// (the conditional put), as shared/caller's own tests use: ledger's tests
// check ProofTable on dynalite, and this test is about the STS side.
type memProofs struct {
	mu   sync.Mutex
	recs map[string]caller.ProofRecord
}

func (m *memProofs) Record(_ context.Context, rec caller.ProofRecord) (caller.ProofRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.recs[rec.ID]; ok {
		return old, false, nil
	}
	m.recs[rec.ID] = rec
	return rec, true, nil
}

// A caller proof signed with the inbound-start session's credentials is
// verified as the session: with the role among the session roles the
// principal is the session ARN (what the start lane admits origins from),
// and without it the role.
func TestSTSSessionCallerProofVerifiesAsTheSession(t *testing.T) {
	keys := newKeys(t)
	now := time.Now().UTC().Truncate(time.Second)
	clock := newSTSClock(now)
	s := trustedSTS(t, keys, clock)
	session := assumeInbound(t, s, localCreds(t, keys, inboundStarter), "src-billing", 900)
	b := caller.Binding{Action: caller.ActionStart, Target: "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_demo:in-x", InputDigest: "sha256:00"}

	verifier := func(t *testing.T, roles ...string) *caller.Verifier {
		t.Helper()
		v, err := caller.NewVerifier(caller.Config{Endpoint: s.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID, SessionRoles: roles},
			&memProofs{recs: map[string]caller.ProofRecord{}})
		if err != nil {
			t.Fatal(err)
		}
		return v.WithClock(clock.now)
	}
	sign := func(t *testing.T, c aws.Credentials, b caller.Binding) string {
		t.Helper()
		p, err := caller.Sign(context.Background(), staticCreds(c), s.Endpoint(), local.Region, b, clock.now())
		if err != nil {
			t.Fatal(err)
		}
		if q := mustQuery(t, p); q.Get("X-Amz-Security-Token") != c.SessionToken {
			t.Fatal("the proof does not carry the credentials' session token")
		}
		return p
	}
	sessionARN := "arn:aws:sts::000000000000:assumed-role/" + inboundRole + "/src-billing"

	id, err := verifier(t, inboundRole).Verify(context.Background(), sign(t, session, b), b)
	if err != nil {
		t.Fatalf("proof signed with the session's credentials: %v", err)
	}
	if id.ARN != sessionARN || id.Principal != sessionARN || id.Account != local.LocalAccountID {
		t.Errorf("identity %+v, want ARN and principal %s", id, sessionARN)
	}
	id, err = verifier(t).Verify(context.Background(), sign(t, session, b), b)
	if err != nil {
		t.Fatalf("proof without session roles: %v", err)
	}
	if id.Principal != inboundRoleARN {
		t.Errorf("principal without session roles = %s, want the role %s", id.Principal, inboundRoleARN)
	}

	// Refusals: another binding, the session's key with a token the
	// stand-in did not issue, the session's key without its token, and the
	// session once expired.
	wrongToken := session
	wrongToken.SessionToken = session.SessionToken[:len(session.SessionToken)-4] + "AAAA"
	noToken := session
	noToken.SessionToken = ""
	for _, tc := range []struct {
		name  string
		creds aws.Credentials
		bind  caller.Binding
		after time.Duration
	}{
		{"proof verified for another binding", session, caller.Binding{Action: caller.ActionStart, Target: "arn:other"}, 0},
		{"session key with a token the stand-in did not issue", wrongToken, b, 0},
		{"session key without its token", noToken, b, 0},
		{"session past its expiry", session, b, 900 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock.set(now.Add(tc.after))
			defer clock.set(now)
			_, err := verifier(t, inboundRole).Verify(context.Background(), sign(t, tc.creds, tc.bind), b)
			var ce *caller.Error
			if !errors.As(err, &ce) || ce.Reason != caller.Refused {
				t.Fatalf("Verify = %v, want [%s]", err, caller.Refused)
			}
		})
	}
}

func mustQuery(t *testing.T, proof string) url.Values {
	t.Helper()
	u, err := url.Parse(proof)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

func TestSTSAssumeRoleRefusals(t *testing.T) {
	keys := newKeys(t)
	now := time.Now().UTC().Truncate(time.Second)
	s := trustedSTS(t, keys, newSTSClock(now))
	starter := localCreds(t, keys, inboundStarter)
	session := assumeInbound(t, s, starter, "src-billing", 900)
	outsider, err := keys.CredentialsIn("999999999999", inboundStarter)
	if err != nil {
		t.Fatal(err)
	}
	in := func(edit func(*sts.AssumeRoleInput)) *sts.AssumeRoleInput {
		i := &sts.AssumeRoleInput{RoleArn: aws.String(inboundRoleARN), RoleSessionName: aws.String("src-billing"), DurationSeconds: aws.Int32(900)}
		if edit != nil {
			edit(i)
		}
		return i
	}
	tests := []struct {
		name       string
		creds      aws.Credentials // the starter when zero
		in         *sts.AssumeRoleInput
		wantCode   string // "" : answered
		wantStatus int
	}{
		{name: "43200 seconds, the upper bound, is answered", in: in(func(i *sts.AssumeRoleInput) { i.DurationSeconds = aws.Int32(43200) })},
		{name: "no DurationSeconds is answered (3600)", in: in(func(i *sts.AssumeRoleInput) { i.DurationSeconds = nil })},
		{name: "64-character session name with every allowed sign is answered", in: in(func(i *sts.AssumeRoleInput) {
			i.RoleSessionName = aws.String("a_B+=,.@-" + strings.Repeat("x", 55))
		})},
		{name: "role with a path is answered", in: in(func(i *sts.AssumeRoleInput) {
			i.RoleArn = aws.String("arn:aws:iam::000000000000:role/service/" + inboundRole)
		})},

		{name: "identity the trust table does not name is denied", creds: localCreds(t, keys, "alice"), in: in(nil), wantCode: "AccessDenied", wantStatus: 403},
		{name: "the trusted name in another account is denied", creds: outsider, in: in(nil), wantCode: "AccessDenied", wantStatus: 403},
		{name: "role the trust table does not name is denied", in: in(func(i *sts.AssumeRoleInput) {
			i.RoleArn = aws.String("arn:aws:iam::000000000000:role/toolgate-local-admin")
		}), wantCode: "AccessDenied", wantStatus: 403},
		{name: "the role's name in another account is denied", in: in(func(i *sts.AssumeRoleInput) {
			i.RoleArn = aws.String("arn:aws:iam::999999999999:role/" + inboundRole)
		}), wantCode: "AccessDenied", wantStatus: 403},
		{name: "a session assuming again (role chaining) is denied", creds: session, in: in(nil), wantCode: "AccessDenied", wantStatus: 403},

		{name: "one-character session name is invalid", in: in(func(i *sts.AssumeRoleInput) { i.RoleSessionName = aws.String("s") }),
			wantCode: "ValidationError", wantStatus: 400},
		{name: "65-character session name is invalid", in: in(func(i *sts.AssumeRoleInput) { i.RoleSessionName = aws.String(strings.Repeat("s", 65)) }),
			wantCode: "ValidationError", wantStatus: 400},
		{name: "session name with a slash is invalid", in: in(func(i *sts.AssumeRoleInput) { i.RoleSessionName = aws.String("src/billing") }),
			wantCode: "ValidationError", wantStatus: 400},
		{name: "session name with a space is invalid", in: in(func(i *sts.AssumeRoleInput) { i.RoleSessionName = aws.String("src billing") }),
			wantCode: "ValidationError", wantStatus: 400},
		{name: "899 seconds is invalid", in: in(func(i *sts.AssumeRoleInput) { i.DurationSeconds = aws.Int32(899) }),
			wantCode: "ValidationError", wantStatus: 400},
		{name: "43201 seconds is invalid", in: in(func(i *sts.AssumeRoleInput) { i.DurationSeconds = aws.Int32(43201) }),
			wantCode: "ValidationError", wantStatus: 400},
		{name: "a user ARN as the role is invalid", in: in(func(i *sts.AssumeRoleInput) {
			i.RoleArn = aws.String("arn:aws:iam::000000000000:user/" + inboundRole)
		}), wantCode: "ValidationError", wantStatus: 400},
		{name: "a parameter the stand-in does not implement is refused", in: in(func(i *sts.AssumeRoleInput) { i.ExternalId = aws.String("x-123") }),
			wantCode: "InvalidQueryParameter", wantStatus: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			creds := tc.creds
			if creds.AccessKeyID == "" {
				creds = starter
			}
			out, err := stsClient(s, creds).AssumeRole(context.Background(), tc.in)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("AssumeRole: %v", err)
				}
				if aws.ToString(out.Credentials.SessionToken) == "" {
					t.Fatal("answered without a session")
				}
				return
			}
			if err == nil {
				t.Fatalf("AssumeRole answered, want %d %s", tc.wantStatus, tc.wantCode)
			}
			if code, status := apiError(t, err); code != tc.wantCode || status != tc.wantStatus {
				t.Fatalf("AssumeRole = %d %s (%v), want %d %s", status, code, err, tc.wantStatus, tc.wantCode)
			}
			if strings.Contains(err.Error(), creds.SecretAccessKey) || (creds.SessionToken != "" && strings.Contains(err.Error(), creds.SessionToken)) {
				t.Error("the refusal repeats a secret or a token")
			}
		})
	}
}

// signedPost is the POST the SDK sends: form at signedAt, header-signed
// over the body's SHA-256 with Content-Type signed.
func signedPost(t *testing.T, endpoint string, creds aws.Credentials, form url.Values, signedAt time.Time) *http.Request {
	t.Helper()
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "sts", local.Region, signedAt); err != nil {
		t.Fatal(err)
	}
	return req
}

func sendPost(t *testing.T, req *http.Request) (int, string, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}
	_ = xml.Unmarshal(body, &e)
	return resp.StatusCode, e.Code, e.Message + string(body)
}

// The header-signed POST is verified as the presigned GET is: the body
// hash, every signed header and the date count.
func TestSTSSignedPostRefusals(t *testing.T) {
	keys := newKeys(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := newSTSClock(now)
	s := trustedSTS(t, keys, clock)
	starter := localCreds(t, keys, inboundStarter)
	assume := url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {inboundRoleARN},
		"RoleSessionName": {"sched-nightly"}, "DurationSeconds": {"900"}}
	withToken := starter
	withToken.SessionToken = "local-token"
	setBody := func(b string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(b))
			r.ContentLength = int64(len(b))
		}
	}

	tests := []struct {
		name        string
		creds       aws.Credentials // the starter when zero
		form        url.Values      // assume when nil
		signedAgo   time.Duration
		edit        func(*http.Request)
		wantStatus  int // 200 when zero
		wantCode    string
		wantMessage string
	}{
		{name: "signed AssumeRole is answered"},
		{name: "signed 14 minutes ago is answered", signedAgo: 14 * time.Minute},
		{name: "signed 14 minutes ahead is answered", signedAgo: -14 * time.Minute},
		{name: "signed GetCallerIdentity is answered", form: url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}}},

		{name: "body altered after signing is refused", edit: setBody(strings.Replace(assume.Encode(), "900", "901", 1)),
			wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "does not match"},
		{name: "wrong secret is refused", creds: localCreds(t, newKeys(t), inboundStarter),
			wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "does not match"},
		{name: "signed header changed is refused", edit: func(r *http.Request) {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		},
			wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "does not match"},
		{name: "signed header claimed but not sent is refused", edit: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "SignedHeaders=", "SignedHeaders=accept;", 1))
		}, wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "not the headers sent"},
		{name: "X-Amz-Date not signed is refused", edit: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), ";x-amz-date", "", 1))
		}, wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "must be signed"},
		{name: "credential scoped to another service is refused", edit: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/sts/", "/iam/", 1))
		}, wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "'sts'"},
		{name: "signed 16 minutes ago is refused", signedAgo: 16 * time.Minute, wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "Signature expired"},
		{name: "signed 16 minutes ahead is refused", signedAgo: -16 * time.Minute, wantStatus: 403, wantCode: "SignatureDoesNotMatch", wantMessage: "not yet current"},
		{name: "session token on a local identity's key is refused", creds: withToken, wantStatus: 403, wantCode: "InvalidClientTokenId"},
		{name: "unknown access key id is refused", creds: aws.Credentials{AccessKeyID: "ASIAAAAAAAAAAAAAAAAA", SecretAccessKey: "unknown-secret-0123", SessionToken: "unknown-token-0123"},
			wantStatus: 403, wantCode: "InvalidClientTokenId"},
		{name: "no Authorization header is refused", edit: func(r *http.Request) { r.Header.Del("Authorization") },
			wantStatus: 403, wantCode: "MissingAuthenticationToken"},
		{name: "malformed Authorization header is refused", edit: func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x") },
			wantStatus: 400, wantCode: "IncompleteSignature"},
		{name: "no X-Amz-Date header is refused", edit: func(r *http.Request) { r.Header.Del("X-Amz-Date") },
			wantStatus: 400, wantCode: "IncompleteSignature", wantMessage: "X-Amz-Date"},
		{name: "another content type is refused", edit: func(r *http.Request) { r.Header.Set("Content-Type", "application/json") },
			wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "x-www-form-urlencoded"},
		{name: "parameters in the query are refused", edit: func(r *http.Request) { r.URL.RawQuery = "Action=AssumeRole" },
			wantStatus: 400, wantCode: "InvalidQueryParameter", wantMessage: "form body"},
		{name: "body over 16 KiB is refused", form: url.Values{"Action": {"AssumeRole"}, "Pad": {strings.Repeat("x", 16<<10)}},
			wantStatus: 413, wantCode: "InvalidParameterValue", wantMessage: "16 KiB"},
		{name: "another action is refused", form: url.Values{"Action": {"GetSessionToken"}, "Version": {"2011-06-15"}},
			wantStatus: 400, wantCode: "InvalidAction"},
		{name: "wrong Version is refused", form: url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-16"}, "RoleArn": {inboundRoleARN}, "RoleSessionName": {"sched-nightly"}},
			wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "Version"},
		{name: "repeated parameter is refused", form: url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {inboundRoleARN}, "RoleSessionName": {"sched-nightly", "sched-other"}},
			wantStatus: 400, wantCode: "InvalidQueryParameter", wantMessage: "RoleSessionName"},
		{name: "missing RoleSessionName is invalid", form: url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {inboundRoleARN}},
			wantStatus: 400, wantCode: "ValidationError", wantMessage: "roleSessionName"},
		{name: "non-numeric DurationSeconds is invalid", form: url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "RoleArn": {inboundRoleARN}, "RoleSessionName": {"sched-nightly"}, "DurationSeconds": {"15m"}},
			wantStatus: 400, wantCode: "ValidationError", wantMessage: "durationSeconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			creds, form := tc.creds, tc.form
			if creds.AccessKeyID == "" {
				creds = starter
			}
			if form == nil {
				form = assume
			}
			req := signedPost(t, s.Endpoint(), creds, form, now.Add(-tc.signedAgo))
			signature := req.Header.Get("Authorization")[len(req.Header.Get("Authorization"))-64:]
			if tc.edit != nil {
				tc.edit(req)
			}
			status, code, message := sendPost(t, req)
			wantStatus := tc.wantStatus
			if wantStatus == 0 {
				wantStatus = http.StatusOK
			}
			if status != wantStatus || code != tc.wantCode || !strings.Contains(message, tc.wantMessage) {
				t.Fatalf("answer %d %s %q, want %d %s containing %q", status, code, message, wantStatus, tc.wantCode, tc.wantMessage)
			}
			if strings.Contains(message, signature) || strings.Contains(message, creds.SecretAccessKey) {
				t.Errorf("the answer repeats the signature or the secret: %s", message)
			}
		})
	}
}

// A session's credentials stop at their expiry, for a header-signed
// request as for a presigned one.
func TestSTSSessionExpires(t *testing.T) {
	keys := newKeys(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := newSTSClock(now)
	s := trustedSTS(t, keys, clock)
	req := signedPost(t, s.Endpoint(), localCreds(t, keys, inboundStarter), url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"},
		"RoleArn": {inboundRoleARN}, "RoleSessionName": {"src-billing"}, "DurationSeconds": {"900"}}, now)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessKeyID     string `xml:"AssumeRoleResult>Credentials>AccessKeyId"`
		SecretAccessKey string `xml:"AssumeRoleResult>Credentials>SecretAccessKey"`
		SessionToken    string `xml:"AssumeRoleResult>Credentials>SessionToken"`
		Expiration      string `xml:"AssumeRoleResult>Credentials>Expiration"`
	}
	if err := xml.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("AssumeRole: %d %v", resp.StatusCode, err)
	}
	if out.Expiration != "2030-01-02T03:19:05Z" {
		t.Errorf("Expiration = %s, want 2030-01-02T03:19:05Z", out.Expiration)
	}
	session := aws.Credentials{AccessKeyID: out.AccessKeyID, SecretAccessKey: out.SecretAccessKey, SessionToken: out.SessionToken}
	who := url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}}

	for _, tc := range []struct {
		at         time.Duration
		wantStatus int
		wantCode   string
	}{{899 * time.Second, 200, ""}, {900 * time.Second, 403, "ExpiredToken"}} {
		clock.set(now.Add(tc.at))
		if status, code, msg := sendPost(t, signedPost(t, s.Endpoint(), session, who, clock.now())); status != tc.wantStatus || code != tc.wantCode {
			t.Errorf("signed POST %s after the issue: %d %s %s, want %d %s", tc.at, status, code, msg, tc.wantStatus, tc.wantCode)
		}
		u, hdr := presignSTS(t, s.Endpoint(), session, clock.now(), 60)
		if resp, body := sendSTS(t, http.MethodGet, u, hdr); resp.StatusCode != tc.wantStatus || !strings.Contains(body, tc.wantCode) {
			t.Errorf("presigned GET %s after the issue: %d %s, want %d %s", tc.at, resp.StatusCode, body, tc.wantStatus, tc.wantCode)
		}
	}
}

func TestSTSTrustRefusesInvalidNames(t *testing.T) {
	s := startSTS(t, newKeys(t), time.Now())
	for _, tc := range []struct{ role, caller string }{
		{"", inboundStarter}, {"role/with/slash", inboundStarter}, {strings.Repeat("r", 65), inboundStarter},
		{inboundRole, "Inbound"}, {inboundRole, ""}, {inboundRole, "000000000000/inbound-start"},
	} {
		if err := s.Trust(tc.role, tc.caller); err == nil {
			t.Errorf("Trust(%q, %q) accepted an invalid name", tc.role, tc.caller)
		}
	}
}
