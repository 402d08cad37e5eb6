// Package console tests the review console (`toolgate review console`,
// resolver/cli/console) in a real browser: Debian's chromium-headless-shell
// driven over the Chrome DevTools Protocol by github.com/chromedp/chromedp,
// against the CLI binary and one local stack (infra/local/stack) shared by
// the package's tests.
//
// The tests check what the console promises its reviewers
// (docs/reviews.md, "The review console"): a pending review appears and its
// e-mail shows the call's exact subject and recipients with their
// allow-list verdicts; nothing in the HTML part reaches the network (canary
// listeners on 127.0.0.1 count every request and must count none);
// approving, rejecting with a reason, answering and editing from the page
// reach the run and its ledger; the requester is refused as reviewer; the
// console's server refuses a request without its cookie, with a foreign
// Origin, without the CSRF token or with a wrong Host, and its capability
// works once; the pages do not scroll sideways at 360 CSS pixels and Tab
// reaches approve and reject.
//
// Without a browser the tests skip with a message naming the apt package;
// with TOOLGATE_REQUIRE_BROWSER=1 (set by .ci/run) they fail instead.
// TOOLGATE_BROWSER names the browser's path in place of the search. A
// failed browser test keeps a full-page screenshot in
// $TOOLGATE_SCREENSHOT_DIR, or else in the test's artifact directory
// (go test -artifacts), and logs its path.
//
// The package holds no code outside its tests.
package console
