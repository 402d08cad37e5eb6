package inboundapi_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

func TestDecodeMessageReadsBothShapes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want inboundapi.Message
	}{
		{`{"source":"billing","event_id":"evt_1"}`, inboundapi.Message{Source: "billing", EventID: "evt_1"}},
		{` {"event_id":"2f6a/x","source":"gh"} `, inboundapi.Message{Source: "gh", EventID: "2f6a/x"}},
		{`{"schedule":"nightly","scheduled_time":"2026-12-03T18:00:00Z"}`, inboundapi.Message{Schedule: "nightly", ScheduledTime: "2026-12-03T18:00:00Z"}},
	} {
		got, err := inboundapi.DecodeMessage([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("DecodeMessage(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestDecodeMessageRefusesAnythingElse(t *testing.T) {
	for name, in := range map[string]string{
		"empty":                 ``,
		"not an object":         `["billing"]`,
		"empty object":          `{}`,
		"unknown member":        `{"source":"billing","event_id":"evt_1","body":"x"}`,
		"both shapes":           `{"source":"billing","event_id":"evt_1","schedule":"nightly","scheduled_time":"2026-12-03T18:00:00Z"}`,
		"source without id":     `{"source":"billing"}`,
		"id without source":     `{"event_id":"evt_1"}`,
		"schedule without time": `{"schedule":"nightly"}`,
		"duplicate member":      `{"source":"billing","source":"other","event_id":"evt_1"}`,
		"number member":         `{"source":"billing","event_id":1}`,
		"object member":         `{"source":{"a":1},"event_id":"evt_1"}`,
		"bad name":              `{"source":"Billing","event_id":"evt_1"}`,
		"id with a space":       `{"source":"billing","event_id":"evt 1"}`,
		"id too long":           `{"source":"billing","event_id":"` + strings.Repeat("e", 257) + `"}`,
		"time with offset":      `{"schedule":"nightly","scheduled_time":"2026-12-03T19:00:00+01:00"}`,
		"time with fraction":    `{"schedule":"nightly","scheduled_time":"2026-12-03T18:00:00.000Z"}`,
		"not a time":            `{"schedule":"nightly","scheduled_time":"tomorrow"}`,
		"data after":            `{"source":"billing","event_id":"evt_1"} {}`,
		"unterminated":          `{"source":"billing","event_id":"evt_1"`,
		"too long":              `{"source":"billing","event_id":"evt_1"` + strings.Repeat(" ", inboundapi.MaxMessageBytes) + `}`,
	} {
		if m, err := inboundapi.DecodeMessage([]byte(in)); err == nil || !errors.Is(err, inboundapi.ErrMessage) {
			t.Errorf("%s: DecodeMessage = %+v, %v; want an ErrMessage", name, m, err)
		}
	}
}

func TestDecodeMessageErrorsNeverEchoAValue(t *testing.T) {
	secret := "sk_live_canary"
	for _, in := range []string{
		`{"source":"billing","event_id":"` + secret + ` "}`,
		`{"source":"` + secret + `","event_id":"e"}`,
		`{"schedule":"nightly","scheduled_time":"` + secret + `"}`,
		`{"` + secret + `":"x"}`,
	} {
		if _, err := inboundapi.DecodeMessage([]byte(in)); err == nil || strings.Contains(err.Error(), "canary") {
			t.Errorf("DecodeMessage(%s) = %v", in, err)
		}
	}
}

func TestEncodedMessagesDecodeToThemselves(t *testing.T) {
	for _, m := range []inboundapi.Message{
		inboundapi.SourceMessage("billing", `evt_"1"\`),
		inboundapi.FiringMessage("nightly", time.Date(2026, 12, 3, 19, 0, 0, 0, time.FixedZone("+1", 3600))),
	} {
		got, err := inboundapi.DecodeMessage(m.Encode())
		if err != nil || got != m {
			t.Errorf("DecodeMessage(%s) = %+v, %v", m.Encode(), got, err)
		}
	}
	if got := inboundapi.FiringMessage("n", time.Date(2026, 12, 3, 19, 0, 0, 0, time.FixedZone("+1", 3600))).ScheduledTime; got != "2026-12-03T18:00:00Z" {
		t.Errorf("a firing's time is %q, want it in UTC", got)
	}
	origin, name, id := inboundapi.FiringMessage("nightly", time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)).Origin()
	if origin != inboundapi.OriginSchedule || name != "nightly" || id != "2026-12-03T18:00:00Z" {
		t.Errorf("Origin = %q %q %q", origin, name, id)
	}
}
