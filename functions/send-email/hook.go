//go:build !crashtest

package main

import "github.com/toolgate/toolgate/shared/sendemail"

// testHook is the identity outside the crashtest build (see hook_crashtest.go).
func testHook(api sendemail.API) sendemail.API { return api }
