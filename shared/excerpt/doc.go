// Package excerpt cuts text quoted in a message (an id, a pattern, a
// server's answer) to a bound without splitting a character, and marks the
// cut with a marker the caller chooses ("..." or "…").
//
// A character is what a Go range loop over the string reads: one valid
// UTF-8 sequence (RFC 3629), or one byte of an invalid sequence. A cut
// falls between two characters only, so a valid sequence is never split
// and the kept bytes are the input's own, unchanged.
//
// Two bounds exist, each in bytes or in characters: Bytes and Runes keep
// at most n of the input and append the marker after it, so the result
// may be n plus the marker's length; BytesWithin and RunesWithin count the
// marker within n, so the result is at most n (or the marker alone, when
// the marker is longer than n). Text of at most n is returned whole, with
// no marker.
package excerpt
