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
// tests need. Production builds never contain it.
func testHook(api sendemail.API) sendemail.API {
	if os.Getenv("TOOLGATE_TEST_CRASH_AFTER_SEND") != "1" {
		return api
	}
	return crashAfterSend{api}
}

type crashAfterSend struct{ sendemail.API }

func (c crashAfterSend) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, opts ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	out, err := c.API.SendEmail(ctx, in, opts...)
	if err == nil {
		os.Exit(3)
	}
	return out, err
}
