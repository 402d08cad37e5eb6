package tool

// The one JSON log line the dispatcher writes per invocation (slog's JSON
// handler on stdout, which CloudWatch Logs receives): its message and
// field names. The infrastructure's metric filters are built from these
// constants (infra/alarms.go), and a test runs a line a real tool function
// wrote through them, so a logger that renamed a field ("msg" is slog's
// key; lambdacontext's logger writes "message") fails a test instead of
// silently stopping an alarm.
const (
	// LogKeyMessage is slog's JSON key of a line's message.
	LogKeyMessage = "msg"
	// LogInvocation is the message of the invocation line.
	LogInvocation = "tool invocation"
	// LogFieldStatus is the ledger status of the invocation (SUCCEEDED,
	// FAILED, DEDUPLICATED, REFUSED, UNKNOWN).
	LogFieldStatus = "ledger_status"
	// LogFieldTool, LogFieldRunID, LogFieldSeq, LogFieldAttempt,
	// LogFieldErrorCode and LogFieldDurationMS are the line's other fields.
	LogFieldTool       = "tool"
	LogFieldRunID      = "run_id"
	LogFieldSeq        = "seq"
	LogFieldAttempt    = "attempt"
	LogFieldErrorCode  = "error_code"
	LogFieldDurationMS = "duration_ms"
	// LogFieldRefusalReason is the line's refusal reason, only when the
	// row has one (ledger.Row.Reason: record-forged, binding-forged).
	LogFieldRefusalReason = "refusal_reason"
)
