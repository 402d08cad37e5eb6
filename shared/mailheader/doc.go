// Package mailheader holds the rules for header field values that toolgate
// writes into an e-mail: today the Subject of the send-email tool. It has
// no I/O and links no AWS SDK, so that the tool (package sendemail, at run
// time) and the resolver (`toolgate check` of literal subjects, rule
// [mail-header]) call the same function and never disagree.
//
// A subject is refused when it is empty, or when it holds:
//   - a line break: CR, LF (RFC 5322 §2.2: a header field body is one
//     line; an unfolded break is header injection), and NEL U+0085, LINE
//     SEPARATOR U+2028, PARAGRAPH SEPARATOR U+2029, which the Unicode
//     Standard (§5.8, Newline Guidelines) also counts as line ends and
//     which Unicode-aware mail software may split a header on;
//   - any other control character: C0 (U+0000–U+001F) but TAB, DEL U+007F
//     (RFC 5322 §2.2 and §3.2.5: a header field body is printable
//     characters and white space) and C1 (U+0080–U+009F, which RFC 5198 §2
//     says must not be used in network text).
//
// Messages name the character by its code point and its position, never the
// subject's text: subjects can be confidential.
package mailheader
