package answertext

import (
	"fmt"
	"strings"
	"time"
)

// Unstreamed returns what of the final message content was not streamed as
// tokens already: nothing when the stream carried it all, the remainder when
// the stream carried its beginning, and the whole content otherwise (an
// error report after a failed answer, for instance).
func Unstreamed(content, streamed string) string {
	switch {
	case streamed == "":
		return content
	case content == streamed:
		return ""
	case strings.HasPrefix(content, streamed):
		return content[len(streamed):]
	}
	return "\n\n" + content
}

// DurationNote is how long a step took, as the answers note it after the
// step (" (1.2s)"); "" when not known.
func DurationNote(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s)", d.Round(time.Millisecond))
}
