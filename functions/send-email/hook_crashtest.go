//go:build crashtest

package main

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/shared/sendemail"
)

// testHook, in the test-only crashtest build, kills the process right after
// SES accepted a message when TOOLGATE_TEST_CRASH_AFTER_SEND=1: the crash
// between the side effect and the record's completion that the end-to-end
// tests need. With TOOLGATE_TEST_CRASH_ARMED also set (a file's path), it
// crashes only after a send that finds that file and removes it: each file
// the test writes arms one crash, and the sends in between complete (a
// fork of the crashed run sending the e-mail again). Production builds
// never contain it.
func testHook(api sendemail.API) sendemail.API {
	if os.Getenv("TOOLGATE_TEST_CRASH_AFTER_SEND") != "1" {
		return api
	}
	return crashAfterSend{api, os.Getenv("TOOLGATE_TEST_CRASH_ARMED")}
}

type crashAfterSend struct {
	sendemail.API
	// armed is the file whose removal arms one crash; "": every send
	// crashes.
	armed string
}

func (c crashAfterSend) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, opts ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	out, err := c.API.SendEmail(ctx, in, opts...)
	// os.Remove succeeds for one caller only: one crash per file.
	if err == nil && (c.armed == "" || os.Remove(c.armed) == nil) {
		os.Exit(3)
	}
	return out, err
}
