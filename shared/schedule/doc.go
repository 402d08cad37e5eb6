// Package schedule reads the schedule expressions of toolgate's scheduled
// Solutions (docs/schedules.md, "Expressions"): EventBridge Scheduler's
// rate(value unit) and six-field cron(minutes hours day-of-month month
// day-of-week year), as the EventBridge Scheduler User Guide, "Schedule
// types", describes them, and tells when an expression fires next, in UTC.
//
// Parse takes what a schedule on AWS may hold; ParseLocal also takes
// rate(N second|seconds), which only the local stack's ticker fires (tests
// need firings seconds apart; EventBridge Scheduler's finest rate is one
// minute). An error is a *ParseError naming the field and the rule broken.
//
// Expr.Next is the first firing strictly after a time: for cron, the first
// whole UTC minute whose fields all match (the Scheduler fires with 60
// second precision, at the minute); for rate, the next multiple of the
// period counted from the Unix epoch, so every reader of one expression
// agrees on its firings (EventBridge Scheduler counts a rate from the
// schedule's creation instead: the local ticker's firings of a rate are
// as far apart, not at the same instants).
//
// The cron dialect is AWS's, not Unix cron's: six fields with a year,
// day-of-week 1-7 with 1 = Sunday, `?` in exactly one of the two day
// fields, and `L`, `W` and `#`. No Go module the project may depend on
// reads it (github.com/robfig/cron/v3 reads five- or six-field Unix cron
// with seconds, without `?` semantics, years, `L`, `W` or `#`, and with 0 =
// Sunday), so it is written here, small, with table tests of the guide's
// examples, a property test of Next and a fuzz target.
package schedule
