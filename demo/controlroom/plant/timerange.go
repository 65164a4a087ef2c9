package plant

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrNoTimeRange: the text names no time range.
var ErrNoTimeRange = errors.New("no time range in the text")

// TimeRange is an archive query's range.
type TimeRange struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Phrase is how the range was stated ("last 2 hours").
	Phrase string `json:"phrase"`
}

// Duration is End − Start.
func (r TimeRange) Duration() time.Duration { return r.End.Sub(r.Start) }

var wordNumbers = map[string]float64{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "twenty": 20, "thirty": 30}

var (
	lastPattern      = regexp.MustCompile(`(?i)\b(?:(?:over|in|during|for|from)\s+)?(?:the\s+)?(?:last|past|previous)\s+(\d+(?:\.\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty)?\s*(seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|d|weeks?)\b`)
	sincePattern     = regexp.MustCompile(`(?i)\bsince\s+yesterday\b`)
	yesterdayPattern = regexp.MustCompile(`(?i)\b(?:for\s+|during\s+|from\s+)?yesterday\b`)
	todayPattern     = regexp.MustCompile(`(?i)\b(?:for\s+|during\s+|since\s+)?(?:today|this\s+morning)\b`)
)

var unitDurations = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}

// ParseTimeRange finds a time range in text relative to now: "last 2
// hours", "past 30 minutes", "the last day", "over the past week", "since
// yesterday" (from yesterday 00:00 UTC), "yesterday" (that whole day),
// "today". It returns ErrNoTimeRange when there is none.
func ParseTimeRange(text string, now time.Time) (TimeRange, error) {
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if m := lastPattern.FindStringSubmatch(text); m != nil {
		n := 1.0
		if m[1] != "" {
			if v, ok := wordNumbers[strings.ToLower(m[1])]; ok {
				n = v
			} else {
				v, err := strconv.ParseFloat(m[1], 64)
				if err != nil || v <= 0 {
					return TimeRange{}, fmt.Errorf("invalid amount %q in %q", m[1], m[0])
				}
				n = v
			}
		}
		unit := strings.ToLower(m[2])
		d := time.Duration(n * float64(unitDurations[unit[0]]))
		if strings.HasPrefix(unit, "mi") {
			d = time.Duration(n * float64(time.Minute))
		}
		return TimeRange{Start: now.Add(-d), End: now, Phrase: strings.TrimSpace(m[0])}, nil
	}
	if m := sincePattern.FindString(text); m != "" {
		return TimeRange{Start: midnight.AddDate(0, 0, -1), End: now, Phrase: m}, nil
	}
	if m := yesterdayPattern.FindString(text); m != "" {
		return TimeRange{Start: midnight.AddDate(0, 0, -1), End: midnight, Phrase: strings.TrimSpace(m)}, nil
	}
	if m := todayPattern.FindString(text); m != "" {
		return TimeRange{Start: midnight, End: now, Phrase: strings.TrimSpace(m)}, nil
	}
	return TimeRange{}, ErrNoTimeRange
}

// StripTimeRange removes time-range phrases from text, so "RF voltage over
// the last 2 hours" searches for "RF voltage" only.
func StripTimeRange(text string) string {
	if !mayMatch(text, timeRangeWords) {
		return text
	}
	for _, re := range []*regexp.Regexp{lastPattern, sincePattern, yesterdayPattern, todayPattern} {
		text = re.ReplaceAllString(text, " ")
	}
	return text
}

// timeRangeWords: every match of the time-range patterns holds one.
var timeRangeWords = []string{"last", "past", "previous", "yesterday", "today", "morning"}
