package local_test

import (
	"context"
	"encoding/base32"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/toolgate/toolgate/infra/local"
)

const (
	stsBinding  = "6f1d0c2a9b3e"
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// presignSTS makes the request a client sends: GetCallerIdentity presigned
// with creds at signedAt (empty-body payload hash, as the SDK's STS presign
// client and shared/caller do), X-Amz-Expires expires, and the binding header
// signed. It returns the URL and the headers to send with it.
func presignSTS(t *testing.T, endpoint string, creds aws.Credentials, signedAt time.Time, expires int) (*url.URL, http.Header) {
	t.Helper()
	q := url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}, "X-Amz-Expires": {strconv.Itoa(expires)}}
	req, err := http.NewRequest(http.MethodGet, endpoint+"/?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Toolgate-Binding", stsBinding)
	signed, hdr, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, emptySHA256, "sts", local.Region, signedAt)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	hdr.Del("Host") // the client sends the URL's host
	return u, hdr
}

func sendSTS(t *testing.T, method string, u *url.URL, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func startSTS(t *testing.T, keys *local.LocalKeys, now time.Time) *local.STS {
	t.Helper()
	s, err := local.StartSTS(keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Now = func() time.Time { return now }
	return s
}

func newKeys(t *testing.T) *local.LocalKeys {
	t.Helper()
	k, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func localCreds(t *testing.T, k *local.LocalKeys, name string) aws.Credentials {
	t.Helper()
	c, err := k.Credentials(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func setQuery(k, v string) func(*url.URL, http.Header) {
	return func(u *url.URL, _ http.Header) {
		q := u.Query()
		q.Set(k, v)
		u.RawQuery = q.Encode()
	}
}

// The SDK's presigner hoists only X-Amz-* headers into the query; any
// other header, such as the binding header, stays a header and is signed.
func TestSTSPresignSignsBindingHeader(t *testing.T) {
	keys := newKeys(t)
	u, hdr := presignSTS(t, "http://127.0.0.1:1", localCreds(t, keys, "alice"), time.Now(), 60)
	if got := u.Query().Get("X-Amz-SignedHeaders"); got != "host;x-toolgate-binding" {
		t.Errorf("X-Amz-SignedHeaders = %q, want host;x-toolgate-binding", got)
	}
	if got := u.Query().Get("X-Amz-Expires"); got != "60" {
		t.Errorf("X-Amz-Expires = %q, want the 60 given", got)
	}
	if got := hdr.Get("X-Toolgate-Binding"); got != stsBinding {
		t.Errorf("signed headers to send: binding %q, want %q", got, stsBinding)
	}
}

func TestSTSAnswersOnlyVerifiedPresignedRequests(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	keys := newKeys(t)
	s := startSTS(t, keys, now)
	alice := localCreds(t, keys, "alice")
	withToken := alice
	withToken.SessionToken = "local-token"

	tests := []struct {
		name        string
		creds       aws.Credentials // alice when zero
		signedAgo   time.Duration   // before the stand-in's now
		expires     int             // X-Amz-Expires; 60 when zero
		method      string          // GET when empty
		edit        func(*url.URL, http.Header)
		wantStatus  int // 403 unless the code is given with a status
		wantCode    string
		wantMessage string
	}{
		{name: "valid request answers the name's ARN", wantStatus: 200},
		{name: "signed 14 minutes ago with X-Amz-Expires 3600 answers", signedAgo: 14 * time.Minute, expires: 3600, wantStatus: 200},
		{name: "signed 4 minutes in the future answers", signedAgo: -4 * time.Minute, wantStatus: 200},

		{name: "wrong secret (keys from another seed) is refused", creds: localCreds(t, newKeys(t), "alice"),
			wantCode: "SignatureDoesNotMatch", wantMessage: "does not match"},
		{name: "unknown access key id is refused", creds: aws.Credentials{AccessKeyID: local.FakeAccessKeyID, SecretAccessKey: local.FakeSecretAccessKey},
			wantCode: "InvalidClientTokenId"},
		{name: "access key id of an invalid name is refused", creds: aws.Credentials{AccessKeyID: "TGLIE", SecretAccessKey: local.FakeSecretAccessKey}, // base32("A")
			wantCode: "InvalidClientTokenId"},
		{name: "access key id without the TGL prefix is refused", creds: aws.Credentials{AccessKeyID: "MFWGSY3F", SecretAccessKey: alice.SecretAccessKey},
			wantCode: "InvalidClientTokenId"},
		{name: "access key id in a non-canonical encoding is refused", creds: aws.Credentials{AccessKeyID: "TGLMF", SecretAccessKey: localCreds(t, keys, "a").SecretAccessKey}, // "a" is TGLME
			wantCode: "InvalidClientTokenId"},
		{name: "session token is refused", creds: withToken, wantCode: "InvalidClientTokenId"},
		{name: "altered binding header value is refused", edit: func(_ *url.URL, h http.Header) { h.Set("X-Toolgate-Binding", "6f1d0c2a9b3f") },
			wantCode: "SignatureDoesNotMatch", wantMessage: "does not match"},
		{name: "binding header removed is refused", edit: func(_ *url.URL, h http.Header) { h.Del("X-Toolgate-Binding") },
			wantCode: "SignatureDoesNotMatch", wantMessage: "not the headers sent"},
		{name: "signed header claimed but not sent is refused", edit: setQuery("X-Amz-SignedHeaders", "host;x-extra;x-toolgate-binding"),
			wantCode: "SignatureDoesNotMatch", wantMessage: "not the headers sent"},
		{name: "extra header added to the SignedHeaders claim is refused", edit: func(u *url.URL, h http.Header) {
			setQuery("X-Amz-SignedHeaders", "host;x-extra;x-toolgate-binding")(u, h)
			h.Set("X-Extra", "1")
		}, wantCode: "SignatureDoesNotMatch", wantMessage: "does not match"},
		{name: "host missing from SignedHeaders is refused", edit: setQuery("X-Amz-SignedHeaders", "x-toolgate-binding"),
			wantCode: "SignatureDoesNotMatch", wantMessage: "host header must be signed"},
		{name: "stale date (16 minutes old, X-Amz-Expires 3600) is refused", signedAgo: 16 * time.Minute, expires: 3600,
			wantCode: "ExpiredToken", wantMessage: "Request has expired"},
		{name: "expired by X-Amz-Expires is refused", signedAgo: 2 * time.Minute, expires: 60,
			wantCode: "ExpiredToken", wantMessage: "Request has expired"},
		{name: "future date (6 minutes ahead) is refused", signedAgo: -6 * time.Minute,
			wantCode: "SignatureDoesNotMatch", wantMessage: "not yet current"},

		{name: "wrong Action is refused", edit: setQuery("Action", "AssumeRole"), wantStatus: 400, wantCode: "InvalidAction"},
		{name: "wrong Version is refused", edit: setQuery("Version", "2011-06-16"), wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "Version"},
		{name: "wrong algorithm is refused", edit: setQuery("X-Amz-Algorithm", "AWS4-HMAC-SHA512"), wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Algorithm"},
		{name: "credential scoped to another service is refused", edit: func(u *url.URL, h http.Header) {
			setQuery("X-Amz-Credential", strings.Replace(u.Query().Get("X-Amz-Credential"), "/sts/", "/s3/", 1))(u, h)
		}, wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Credential"},
		{name: "credential with an empty region is refused", edit: func(u *url.URL, h http.Header) {
			setQuery("X-Amz-Credential", strings.Replace(u.Query().Get("X-Amz-Credential"), "/"+local.Region+"/", "//", 1))(u, h)
		}, wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Credential"},
		{name: "unparsable X-Amz-Date is refused", edit: setQuery("X-Amz-Date", "2030-01-02T03:04:05Z"), wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Date"},
		{name: "non-numeric X-Amz-Expires is refused", edit: setQuery("X-Amz-Expires", "1m"), wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Expires"},
		{name: "X-Amz-Expires 0 is refused", edit: setQuery("X-Amz-Expires", "0"), wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Expires"},
		{name: "X-Amz-Expires over 7 days is refused", edit: setQuery("X-Amz-Expires", "604801"), wantStatus: 400, wantCode: "InvalidParameterValue", wantMessage: "X-Amz-Expires"},
		{name: "missing signature is refused", edit: func(u *url.URL, _ http.Header) {
			q := u.Query()
			q.Del("X-Amz-Signature")
			u.RawQuery = q.Encode()
		}, wantStatus: 400, wantCode: "MissingParameter", wantMessage: "X-Amz-Signature"},
		{name: "duplicate query parameter is refused", edit: func(u *url.URL, _ http.Header) { u.RawQuery += "&Action=GetCallerIdentity" },
			wantStatus: 400, wantCode: "InvalidQueryParameter", wantMessage: "Action"},
		{name: "unknown query parameter is refused", edit: func(u *url.URL, _ http.Header) { u.RawQuery += "&DurationSeconds=900" },
			wantStatus: 400, wantCode: "InvalidQueryParameter", wantMessage: "DurationSeconds"},
		{name: "malformed query string is refused", edit: func(u *url.URL, _ http.Header) { u.RawQuery += "&%zz=1" },
			wantStatus: 400, wantCode: "InvalidQueryParameter", wantMessage: "malformed"},
		{name: "URL over 8 KiB is refused", edit: func(u *url.URL, _ http.Header) { u.RawQuery += "&Pad=" + strings.Repeat("x", 8<<10) },
			wantStatus: 414, wantCode: "InvalidQueryParameter", wantMessage: "too long"},
		{name: "method other than GET and POST is refused", method: http.MethodPut, wantStatus: 405, wantCode: "InvalidAction", wantMessage: "presigned GET or a signed POST"},
		{name: "POST of a presigned query is refused", method: http.MethodPost, wantStatus: 400, wantCode: "InvalidQueryParameter", wantMessage: "form body"},
		{name: "path other than / is refused", edit: func(u *url.URL, _ http.Header) { u.Path = "/sts" }, wantStatus: 404, wantCode: "InvalidAction", wantMessage: "path"},
	}
	requestID := regexp.MustCompile(`<RequestId>[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}</RequestId>`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			creds, expires, method := tc.creds, tc.expires, tc.method
			if creds.AccessKeyID == "" {
				creds = alice
			}
			if expires == 0 {
				expires = 60
			}
			if method == "" {
				method = http.MethodGet
			}
			u, hdr := presignSTS(t, s.Endpoint(), creds, now.Add(-tc.signedAgo), expires)
			signature := u.Query().Get("X-Amz-Signature")
			if tc.edit != nil {
				tc.edit(u, hdr)
			}
			resp, body := sendSTS(t, method, u, hdr)
			if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
				t.Errorf("Content-Type = %q, want text/xml", ct)
			}
			if !requestID.MatchString(body) {
				t.Errorf("body has no UUID RequestId: %s", body)
			}
			if tc.wantCode == "" {
				want := `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>` +
					`<Arn>arn:aws:iam::000000000000:user/alice</Arn><UserId>` + alice.AccessKeyID + `</UserId><Account>000000000000</Account>` +
					`</GetCallerIdentityResult><ResponseMetadata><RequestId></RequestId></ResponseMetadata></GetCallerIdentityResponse>`
				if got := requestID.ReplaceAllString(body, "<RequestId></RequestId>"); resp.StatusCode != 200 || got != want {
					t.Fatalf("answer %d\n%s\nwant 200\n%s", resp.StatusCode, body, want)
				}
				return
			}
			wantStatus := tc.wantStatus
			if wantStatus == 0 {
				wantStatus = http.StatusForbidden
			}
			var e struct {
				XMLName xml.Name
				Type    string `xml:"Error>Type"`
				Code    string `xml:"Error>Code"`
				Message string `xml:"Error>Message"`
			}
			if err := xml.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("answer %d is not XML: %v\n%s", resp.StatusCode, err, body)
			}
			if resp.StatusCode != wantStatus || e.Code != tc.wantCode || !strings.Contains(e.Message, tc.wantMessage) {
				t.Fatalf("answer %d %s %q, want %d %s containing %q", resp.StatusCode, e.Code, e.Message, wantStatus, tc.wantCode, tc.wantMessage)
			}
			if e.XMLName.Space != "https://sts.amazonaws.com/doc/2011-06-15/" || e.XMLName.Local != "ErrorResponse" || e.Type != "Sender" {
				t.Errorf("error shape: %s", body)
			}
			if strings.Contains(body, signature) || strings.Contains(body, creds.SecretAccessKey) {
				t.Errorf("the refusal echoes the signature or the secret: %s", body)
			}
		})
	}
}

// Real STS answers GetCallerIdentity for the credentials of any account;
// the stand-in too, so that tests can present another account's keys.
func TestSTSAnswersForAnotherAccountsKeys(t *testing.T) {
	keys := newKeys(t)
	now := time.Now().UTC().Truncate(time.Second)
	s := startSTS(t, keys, now)
	outside, err := keys.CredentialsIn("999999999999", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if inside := localCreds(t, keys, "alice"); outside.AccessKeyID == inside.AccessKeyID || outside.SecretAccessKey == inside.SecretAccessKey {
		t.Fatal("alice of another account has the local alice's keys")
	}
	u, hdr := presignSTS(t, s.Endpoint(), outside, now, 60)
	resp, body := sendSTS(t, http.MethodGet, u, hdr)
	want := `<Arn>arn:aws:iam::999999999999:user/alice</Arn><UserId>` + outside.AccessKeyID + `</UserId><Account>999999999999</Account>`
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
		t.Fatalf("another account's proof: %d %s, want 200 with %s", resp.StatusCode, body, want)
	}
	// The other account's keys do not sign for the local account's alice:
	// a key ID naming the local account explicitly stands for nobody.
	forged := outside
	forged.AccessKeyID = "TGL" + strings.TrimRight(base32Std("000000000000/alice"), "=")
	u, hdr = presignSTS(t, s.Endpoint(), forged, now, 60)
	if resp, body := sendSTS(t, http.MethodGet, u, hdr); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "InvalidClientTokenId") {
		t.Fatalf("a key ID naming the local account: %d %s, want 403 InvalidClientTokenId", resp.StatusCode, body)
	}
	for _, account := range []string{"", "12345678901", "1234567890123", "12345678901a"} {
		if _, err := keys.CredentialsIn(account, "alice"); err == nil {
			t.Errorf("CredentialsIn(%q) accepted an account that is not 12 digits", account)
		}
	}
}

func base32Std(s string) string { return base32.StdEncoding.EncodeToString([]byte(s)) }
