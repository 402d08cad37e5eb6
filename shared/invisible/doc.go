// Package invisible finds and escapes the characters a person cannot see,
// or that reorder what they see, in text toolgate shows them: a tool's
// description and title and the descriptions and titles in its schemas,
// which a toolset's publisher and reviewers read and a model is given as
// the tool's meaning (docs/toolsets.md, "Invisible characters").
//
// The characters (Is) are Unicode's control characters (category Cc)
// other than tab and newline; its format characters (category Cf: the
// zero-width space, joiners and marks U+200B–U+200F, the bidirectional
// embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the
// invisible operators U+2060–U+2064, the byte order mark U+FEFF, among
// others); the whole tag block U+E0000–U+E007F, assigned or not; and the
// line and paragraph separators U+2028 and U+2029. The categories are Go's
// unicode tables, so they follow the Unicode version Go ships.
package invisible
