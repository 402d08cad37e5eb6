// Package reviewer is who may decide a review: IAM principal ARN patterns,
// their validation and their matching (docs/reviews.md). It links no AWS
// SDK, so that the resolver checks a Solution's reviewers at compile time
// with the very rules review-decision applies at run time.
package reviewer
