package request_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
)

// sesAt is an SES v2 client of endpoint, as main builds it.
func sesAt(endpoint string) *sesv2.Client {
	return sesv2.New(sesv2.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})
}

// noticeStatus reads review id's notice item's status and error code.
func noticeStatus(t *testing.T, db *dynamodb.Client, tableName, id string) (status, code string) {
	t.Helper()
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(tableName), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Notice.Key(id)},
			table.SK: &types.AttributeValueMemberS{Value: table.Notice.SKValue}}})
	if err != nil || out.Item == nil {
		t.Fatalf("notice item of %s: %v", id, err)
	}
	s := func(n string) string {
		v, _ := out.Item[n].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	return s("status"), s("error_code")
}

// A notice SES refuses is recorded FAILED with SES's error code, never
// its message; one SES does not answer is given up after NoticeTimeout
// and recorded FAILED "timeout"; the review goes on either way (notice
// returns nothing to fail it). SES's answers come from an httptest server
// speaking SES v2's REST JSON: the SES emulator neither refuses nor
// hangs, so this stand-in is the test's own.
func TestANoticeSESRefusesOrDoesNotAnswerIsRecordedFailed(t *testing.T) {
	_, db, tableName := localtest.SharedTable(t, "notices")
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "MessageRejected")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"message":"Email address is not verified: ops@example.com"}`))
	}))
	defer refusing.Close()
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	notices, err := functionconfig.ParseReviewNotices([]string{"@reviewers.example.com"}, "toolgate@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, endpoint, code string
	}{
		{"refused", refusing.URL, "MessageRejected"},
		{"no answer", silent.URL, "timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Notices: notices},
				request.Deps{Store: dynamo.NewStore(db, tableName), SES: sesAt(c.endpoint)})
			r := &review.Review{ID: "rv_" + c.code, RunID: "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_digest:run-1", Step: "approve",
				Of: "send", Tool: "send-email", ExpiresAt: time.Now().Add(time.Hour)}
			start := time.Now()
			h.Notice(context.Background(), r, []string{"ann@reviewers.example.com"})
			if took := time.Since(start); took > request.NoticeTimeout+2*time.Second {
				t.Errorf("the notice took %v, over its bound %v", took, request.NoticeTimeout)
			}
			if status, code := noticeStatus(t, db, tableName, r.ID); status != dynamo.NoticeFailed || code != c.code {
				t.Errorf("notice %s %q, want FAILED %q", status, code, c.code)
			}
		})
	}
}

// With the platform's sender authorised by an SES identity (sending
// authorisation), a notice names that identity as send-email does
// (FromEmailAddressIdentityArn), and without one it names none. SES's
// side is an httptest server that records the request and answers a
// message id, the test's own stand-in as above: the SES emulator ignores
// the member.
func TestANoticeNamesTheSendersIdentityWhenThePlatformHasOne(t *testing.T) {
	_, db, tableName := localtest.SharedTable(t, "notices")
	bodies := make(chan map[string]any, 2)
	ses := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("SendEmail body: %v", err)
		}
		bodies <- in
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"MessageId":"m-1"}`))
	}))
	defer ses.Close()
	const arn = "arn:aws:ses:us-east-1:210987654321:identity/example.com"
	for _, identity := range []string{arn, ""} {
		notices, err := functionconfig.ParseReviewNotices([]string{"@reviewers.example.com"}, "toolgate@example.com")
		if err != nil {
			t.Fatal(err)
		}
		notices.IdentityARN = identity
		h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Notices: notices},
			request.Deps{Store: dynamo.NewStore(db, tableName), SES: sesAt(ses.URL)})
		r := &review.Review{ID: review.NewID(), RunID: "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_digest:run-1", Step: "approve",
			Of: "send", Tool: "send-email", ExpiresAt: time.Now().Add(time.Hour)}
		h.Notice(context.Background(), r, []string{"ann@reviewers.example.com"})
		in := <-bodies
		if got, _ := in["FromEmailAddressIdentityArn"].(string); got != identity {
			t.Errorf("identity %q: SendEmail named %q", identity, got)
		}
		if status, _ := noticeStatus(t, db, tableName, r.ID); status != dynamo.NoticeSent {
			t.Errorf("identity %q: notice %s, want SENT", identity, status)
		}
	}
}
