package review

// truncate keeps a quoted value short enough for a message.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
