// Stub for the functions branch; replaced by the real package at merge.

package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/hostlist"
)

type Type string

const (
	RunStarted         Type = "run.started"
	RunSucceeded       Type = "run.succeeded"
	RunFailed          Type = "run.failed"
	RunTimedOut        Type = "run.timed_out"
	RunAborted         Type = "run.aborted"
	ReviewRequested    Type = "review.requested"
	ReviewDecided      Type = "review.decided"
	ToolSchemaChanged  Type = "tool.schema_changed"
	CredentialsExpired Type = "credentials.expired"
	CallUnknown        Type = "call.unknown"
)

var Types = []Type{RunStarted, RunSucceeded, RunFailed, RunTimedOut, RunAborted, ReviewRequested, ReviewDecided, ToolSchemaChanged, CredentialsExpired, CallUnknown}

func ParsePatterns(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		ok := false
		for _, t := range Types {
			ok = ok || Matches([]string{p}, t)
		}
		if !ok {
			return nil, errors.New("event pattern " + strconv.Quote(p) + " names no event type")
		}
		out = append(out, p)
	}
	return out, nil
}

func Matches(patterns []string, t Type) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); (ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(string(t), prefix)) || p == string(t) {
			return true
		}
	}
	return false
}

type Event struct {
	ID        string
	Type      Type
	Timestamp time.Time
	Solution  string
	Data      json.RawMessage
}

func EventID(t Type, source string) string {
	sum := sha256.Sum256([]byte(string(t) + "\n" + source))
	return "evt_" + strings.ToLower(base32NoPad(sum[:16]))
}

func base32NoPad(b []byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	var out []byte
	var buf, bits uint
	for _, c := range b {
		buf, bits = buf<<8|uint(c), bits+8
		for bits >= 5 {
			out, bits = append(out, alphabet[(buf>>(bits-5))&31]), bits-5
		}
	}
	if bits > 0 {
		out = append(out, alphabet[(buf<<(5-bits))&31])
	}
	return string(out)
}

func Body(e Event) ([]byte, error) {
	return json.Marshal(map[string]any{"type": e.Type, "timestamp": e.Timestamp.UTC().Format(time.RFC3339), "data": e.Data})
}

type RunData struct {
	ExecutionARN    string `json:"execution_arn"`
	StateMachineARN string `json:"state_machine_arn"`
	Name            string `json:"name"`
	Status          string `json:"status"`
	StartDate       string `json:"start_date"`
	StopDate        string `json:"stop_date,omitempty"`
}

func NewSecret() (string, []byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", nil, err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key), key, nil
}

func Sign(keys [][]byte, id string, ts time.Time, body []byte) (string, error) {
	var sigs []string
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

const RotationGrace = 24 * time.Hour

type Schedule []time.Duration

var DefaultSchedule = Schedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

func ParseSchedule(s string) (Schedule, error) {
	var out Schedule
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (s Schedule) Attempts() int { return len(s) + 1 }

func (s Schedule) Delay(receiveCount int) (time.Duration, bool) {
	if receiveCount < 1 || receiveCount > len(s) {
		return 0, false
	}
	return s[receiveCount-1], true
}

type Outcome string

type EndpointRules struct {
	Allow          hostlist.List
	AllowAddresses []netip.Prefix
	OwnHosts       []string
}

func (r EndpointRules) Check(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return nil, errors.New("the endpoint must be an https URL")
	}
	return u, nil
}

type Sender struct {
	Rules   EndpointRules
	Timeout time.Duration
	Client  *http.Client
}

type Attempt struct {
	Status     int
	Latency    time.Duration
	Outcome    Outcome
	ErrorClass string
}

func (s *Sender) Send(ctx context.Context, endpoint string, headers http.Header, body []byte) Attempt {
	return Attempt{Outcome: "retry", ErrorClass: "connect"}
}
