// Package console is the review console: a web page served on
// 127.0.0.1 by `toolgate review console` (the kubectl proxy pattern), where
// a reviewer reads each pending review exactly as its call will be sent
// and decides it. The page never calls review-decision itself: every
// request goes through a Backend, which the CLI implements by signing each
// request with the reviewer's own AWS identity and a fresh caller proof,
// so no credential or proof ever reaches the browser (docs/reviews.md,
// "The review console").
//
// The server admits one browser session: a single-use capability in the
// printed URL is exchanged for an HttpOnly, SameSite=Strict cookie; every
// request is checked for the exact Host, Sec-Fetch-Site (Fetch Metadata),
// Origin and, on POST, a per-page CSRF token. An e-mail's HTML part is
// rewritten (RewriteEmailHTML) and served to a sandboxed frame under a
// Content-Security-Policy that loads nothing and runs no script.
package console
