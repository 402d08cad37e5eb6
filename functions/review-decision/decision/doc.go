// Package decision is the review-decision function's logic (docs/reviews.md):
// Service lists, shows and decides reviews for the callers their reviewer
// patterns admit and delivers each decision to its review Task once;
// Handler serves it as a Lambda handler, invoked directly or behind an
// IAM-authorised Function URL. Every request carries a caller proof
// (docs/identity.md); every failure is a review.Code. A decision that
// reaches its Task records its review.decided webhook event once
// (Deps.Webhooks; docs/webhooks.md).
package decision
