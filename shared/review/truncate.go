package review

// Truncate keeps a quoted value short enough for a message.
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
