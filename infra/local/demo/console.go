package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/toolgate/toolgate/resolver/cli"
)

// consoleCommand is the command a reviewer runs to decide the demo's
// pending review in the browser (docs/reviews.md, "The review console").
func consoleCommand(endpoint string) string {
	return "bin/toolgate review console --endpoint " + endpoint + " --as " + reviewer
}

// consoleLine is the one line toolgate review console prints.
var consoleLine = regexp.MustCompile(`^review console: (http://127\.0\.0\.1:[0-9]+)/open\?c=[A-Za-z0-9_-]+$`)

// showConsole runs toolgate review console as the demo's reviewer for a
// moment, as a reader would: it opens the printed link once as a
// browser's top-level navigation does (the capability for the session
// cookie), reads the pending list with the cookie, and prints whether it
// lists review id, then stops the console. The console signs each call
// of review-decision with the reviewer's local keys, as the CLI does.
func showConsole(ctx context.Context, endpoint, id string) error {
	args := []string{"review", "console", "--no-open", "--endpoint", endpoint, "--as", reviewer}
	showCommand(args)
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	exited := make(chan int, 1)
	go func() {
		exited <- cli.RunWith(args, cli.Env{Getenv: os.Getenv, LoadAWSConfig: config.LoadDefaultConfig, Stdout: pw, Stderr: os.Stderr, Stop: stop})
		pw.Close()
	}()
	defer func() {
		close(stop)
		go io.Copy(io.Discard, pr)
		<-exited
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		return fmt.Errorf("toolgate review console printed no link: %v", err)
	}
	line = strings.TrimSpace(line)
	m := consoleLine.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("toolgate review console printed %q, not its link", line)
	}
	fmt.Println("  review console: " + m[1] + "/open?c=… (a single-use link; the capability is not shown here)")
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	navigate := func(url string, cookie *http.Cookie) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		// What a browser sends for a link typed or opened from outside.
		req.Header.Set("Sec-Fetch-Site", "none")
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		req.Header.Set("Sec-Fetch-Dest", "document")
		if cookie != nil {
			req.AddCookie(cookie)
		}
		return client.Do(req)
	}
	resp, err := navigate(line[len("review console: "):], nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		return fmt.Errorf("opening the console's link: HTTP %d with %d cookies, want a 303 and the session cookie", resp.StatusCode, len(cookies))
	}
	fmt.Printf("  the link opened the console once: 303 to /, a session cookie (HttpOnly %v, SameSite=Strict %v)\n", cookies[0].HttpOnly, cookies[0].SameSite == http.SameSiteStrictMode)
	resp, err = navigate(m[1]+"/", cookies[0])
	if err != nil {
		return err
	}
	page, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-review-id="`+id+`"`) {
		return fmt.Errorf("the console's pending list (HTTP %d) does not list review %s", resp.StatusCode, id)
	}
	fmt.Printf("  its pending list shows review %s, with the link %s/reviews/%s to the e-mail as it will be sent\n", id, m[1], id)
	again, err := navigate(line[len("review console: "):], nil)
	if err != nil {
		return err
	}
	again.Body.Close()
	fmt.Printf("  the same link a second time: HTTP %d (it works once)\n", again.StatusCode)
	fmt.Printf("  a reviewer runs it the same way, and decides in the browser: %s (on a deployed stage: bin/toolgate review console --stage STAGE)\n", consoleCommand(endpoint))
	return nil
}
