// Package sendemail is the send-email tool: one e-mail through Amazon SES v2
// SendEmail, from the platform's configured identity, to allow-listed
// recipients only.
//
// The input is the catalog's send-email input (to, cc, bcc, reply_to,
// subject, text and/or html); the output is {"message_id": "<SES message
// id>"}. The sender and its SES identity ARN come from Config, never from
// the input.
//
// Before SES is called, the tool checks, in this order:
//   - at least one "to" recipient and at most MaxRecipients (50) in to, cc
//     and bcc together, the SES quota per message → TOOL_INPUT_INVALID;
//   - a subject that mailheader.CheckSubject accepts (not empty, no line
//     break, CR, LF, NEL, U+2028 or U+2029, no other control character but
//     TAB), and a text or html body → TOOL_INPUT_INVALID;
//   - every address of to, cc, bcc and reply_to against the allow-list
//     (package recipient): an address that is not one bare addr-spec →
//     TOOL_INPUT_INVALID, a valid one that is not allowed →
//     TOOL_PERMISSION_DENIED, the message naming each address (with its field
//     and index) and the rule. One failing address stops the whole send.
//
// Addresses (to, cc, bcc and reply_to) are sent in their canonical form,
// recipient.Address.Canonical(): the local part lower-cased, the domain as
// its lower-case A-label (SES needs 7-bit ASCII addresses), so
// Bob@Bücher.example goes as bob@xn--bcher-kva.example. The function's role
// allows ses:SendEmail only to recipients that the allow-list's IAM
// patterns match (recipient.List.IAMPatterns, a ForAllValues:StringLike
// condition on ses:Recipients), which IAM compares case-sensitively: an
// address sent as written could be denied by IAM though the list allows it.
//
// # SES errors
//
// SendEmail is not idempotent, so the tool makes exactly one attempt (it
// sets RetryMaxAttempts to 1 on the call) and leaves retries to the
// dispatcher and the state machine, which know whether the effect may have
// happened. Errors become codes as follows (names from the SES v2 API
// reference and the sesv2/types package):
//
//	TooManyRequestsException, LimitExceededException (sending rate or daily
//	quota), Throttling*, HTTP 429                      TOOL_RATE_LIMITED
//	AccountSuspendedException, SendingPausedException,
//	MessageRejected "Email address is not verified"
//	(SES sandbox or unverified sender identity),
//	AccessDenied*, credential errors, HTTP 403         TOOL_PERMISSION_DENIED
//	other MessageRejected, MailFromDomainNotVerifiedException,
//	NotFoundException, BadRequestException, other 4xx   TOOL_PERMANENT_FAILURE
//	HTTP 5xx (InternalServiceErrorException, …), an
//	unreadable 2xx answer                              TOOL_UPSTREAM_UNAVAILABLE, maybe applied
//	connection refused, DNS or TLS handshake failure   TOOL_UPSTREAM_UNAVAILABLE (nothing sent)
//	timeout, connection lost, cancellation mid-call    TOOL_UPSTREAM_UNAVAILABLE, maybe applied
//	deadline already passed before the call            TOOL_TIMEOUT (nothing sent)
//	request not built (signing, serialisation)         TOOL_INTERNAL (nothing sent)
//	a 2xx answer without a message id                  TOOL_OUTPUT_INVALID, maybe applied
//
// "Maybe applied" (tool.Error.MaybeApplied) means the request may have
// reached SES, so the mail may have gone out: the dispatcher records the
// attempt as UNKNOWN rather than FAILED. A MessageRejected whose text says
// "Email address is not verified" (Amazon SES Developer Guide, "Amazon SES
// email sending errors") is TOOL_PERMISSION_DENIED, not a fault of the
// message: the account may not use the address until it is verified, and
// while the account is in the SES sandbox every recipient must be a
// verified identity too. The message says so without naming the addresses.
// Messages and log lines never carry SES's own error text, which names
// addresses of the account's identities and recipients.
package sendemail
