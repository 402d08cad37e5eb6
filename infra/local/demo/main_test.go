package main

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver"
)

// TestDemoSucceedsWithTheDemoSolutionsPortTaken runs make run's whole flow
// in-process while 127.0.0.1:18080, the port
// testdata/solutions/demo-digest.yaml names, is held by another listener:
// the data server takes a free port and the Solution published names it.
func TestDemoSucceedsWithTheDemoSolutionsPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", stack.DemoDataAddr)
	switch {
	case err == nil:
		defer ln.Close()
	case errors.Is(err, syscall.EADDRINUSE):
		// Another process holds it already: the case under test.
	default:
		t.Fatalf("hold %s: %v", stack.DemoDataAddr, err)
	}
	if c, err := net.Dial("tcp", stack.DemoDataAddr); err != nil {
		t.Fatalf("%s is not taken: %v", stack.DemoDataAddr, err)
	} else {
		c.Close()
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd) // run changes to the repository's root; this restores the directory
	if err := run(t.Context()); err != nil {
		t.Fatalf("the demo with %s taken: %v", stack.DemoDataAddr, err)
	}
}

// TestOnDataServerRewritesEveryDataAddress checks the copy the demo
// publishes: testdata/solutions/demo-digest.yaml with its data server on
// another port still compiles, and names 127.0.0.1:18080 nowhere.
func TestOnDataServerRewritesEveryDataAddress(t *testing.T) {
	const file = "../../../testdata/solutions/demo-digest.yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), stack.DemoDataAddr) {
		t.Fatalf("%s does not name %s", file, stack.DemoDataAddr)
	}
	got := stack.OnDataServer(src, "http://127.0.0.1:40123")
	if strings.Contains(string(got), stack.DemoDataAddr) {
		t.Errorf("the copy still names %s:\n%s", stack.DemoDataAddr, got)
	}
	for _, want := range []string{`fetch_hosts: ["127.0.0.1:40123"]`, "url: http://127.0.0.1:40123/digest.json"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the copy lacks %s:\n%s", want, got)
		}
	}
	res := resolver.Compile(file, got, resolver.Options{})
	if !res.OK() {
		t.Errorf("the copy does not compile: %v", res.Diagnostics)
	}
}

// TestOnHTTPServiceRewritesEveryServiceAddress checks the copy the http
// section publishes: testdata/demo/demo-http.yaml with the recording
// service on another port names 127.0.0.1:18081 nowhere, and compiles.
func TestOnHTTPServiceRewritesEveryServiceAddress(t *testing.T) {
	const file = "../../../testdata/demo/demo-http.yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), stack.DemoHTTPAddr) {
		t.Fatalf("%s does not name %s", file, stack.DemoHTTPAddr)
	}
	got := stack.OnHTTPService(src, "http://127.0.0.1:40124")
	if strings.Contains(string(got), stack.DemoHTTPAddr) {
		t.Errorf("the copy still names %s:\n%s", stack.DemoHTTPAddr, got)
	}
	for _, want := range []string{`host: "127.0.0.1:40124"`, "url: http://127.0.0.1:40124/hooks/chat"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the copy lacks %s:\n%s", want, got)
		}
	}
	res := resolver.Compile(file, got, resolver.Options{})
	if !res.OK() {
		t.Errorf("the copy does not compile: %v", res.Diagnostics)
	}
}

// The command make run prints next to the pending review parses as the
// CLI's review console command line, on the local endpoint, as the demo's
// reviewer.
func TestConsoleCommandIsTheReviewersConsoleLine(t *testing.T) {
	got := consoleCommand("http://127.0.0.1:9001")
	if got != "bin/toolgate review console --endpoint http://127.0.0.1:9001 --as demo-reviewer" || strings.Contains(got, "\n") {
		t.Fatalf("consoleCommand = %q", got)
	}
}
