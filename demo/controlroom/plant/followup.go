package plant

import (
	"regexp"
	"strings"
	"time"
)

// An offline follow-up reaches a capability as the message that named the
// subject and each follow-up after it, joined by FollowUpJoin (the offline
// task extraction's joint: "vacum sectr 3 — follow-up: what about sector
// 4?"). A model's task extraction writes a self-contained task instead, and
// then there is nothing to resolve. The capabilities resolve a follow-up by
// replacing one detail of the subject: a numbered device of the same kind
// (sector 3 → sector 4), the quantity (beam current → RF voltage), the time
// window (last 2 hours → since yesterday), or by comparing the same
// channels over a shifted window ("compare with yesterday", "vs last
// week").

// FollowUpJoin separates the messages of an offline follow-up task.
const FollowUpJoin = " — follow-up: "

// splitFollowUps returns the subject message and the follow-ups after it
// (none for a self-contained text).
func splitFollowUps(text string) (subject string, followUps []string) {
	parts := strings.Split(text, FollowUpJoin)
	return strings.TrimSpace(parts[0]), parts[1:]
}

// ResolveFollowUps turns a follow-up task into the query it stands for:
// the subject's words with each follow-up's details in place of the
// subject's of the same kind. A text without follow-ups is returned as it
// is; so is one whose latest message names channels explicitly.
func (p *Plant) ResolveFollowUps(text string) string {
	subject, followUps := splitFollowUps(text)
	if len(followUps) == 0 {
		return text
	}
	for i := len(followUps) - 1; i >= 0; i-- {
		if len(p.explicitChannels(followUps[i])) > 0 {
			return followUps[i]
		}
	}
	cur := p.index.details(subject)
	for _, f := range followUps {
		next := p.index.details(f)
		if len(next) == 0 {
			continue // "read it", "plot it", "compare with yesterday": the subject stands
		}
		// Numbered devices replace those of their kind ("sector 4" for
		// "sector 3"); quantity words replace the quantity.
		kinds := map[string]bool{}
		content := false
		for _, w := range next {
			if k := idKind(w.term); k != "" {
				kinds[k] = true
			} else {
				content = true
			}
		}
		var kept []word
		for _, w := range cur {
			k := idKind(w.term)
			if k != "" && !kinds[k] || k == "" && !content {
				kept = append(kept, w)
			}
		}
		cur = append(kept, next...)
	}
	return strings.Join(displayWords(cur), " ")
}

// displayWords are the words as an answer says them: a quantity by its
// full name whatever the user typed ("vacum" → "vacuum"), a numbered
// device by its label ("sector 4"), an acronym in capitals ("RF").
func displayWords(ws []word) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		switch d, ok := display[w.term]; {
		case isIdentifier(w.term):
			out = append(out, w.surface)
		case ok:
			out = append(out, d)
		default:
			out = append(out, w.term)
		}
	}
	return out
}

// display names the canonical terms ("vac") in full.
var display = map[string]string{"vac": "vacuum", "temp": "temperature", "quad": "quadrupole", "cav": "cavity", "kly": "klystron",
	"volt": "voltage", "freq": "frequency", "fwd": "forward", "refl": "reflected", "rf": "RF", "bpm": "BPM", "dcct": "DCCT",
	"bts": "BTS", "sr": "SR", "br": "booster", "linac": "linac"}

// details are the words of a text that name channels: numbered devices and
// quantities (no time, no units, no fillers, no follow-up words).
func (ix *searchIndex) details(text string) []word {
	ws, _, _ := normalise(StripTimeRange(text), ix.known, ix.fix)
	var out []word
	for _, w := range ws {
		if w.unit || !ix.known(w.term) && !isIdentifier(w.term) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// idKind is a numbered device's kind ("c" of "c3"), "" for other terms.
func idKind(term string) string {
	prefix, _, _ := splitIdentifier(term)
	return prefix
}

// latestTimeRange is the time range the latest message that names one
// states (a follow-up's "since yesterday" replaces the subject's "last 2
// hours"), ignoring what a comparison names ("compare with yesterday" is
// the window compared with, not the window shown).
func latestTimeRange(text string, now time.Time) (TimeRange, bool) {
	subject, followUps := splitFollowUps(text)
	msgs := append([]string{subject}, followUps...)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if _, ok := comparison(m); ok {
			m = comparePattern.ReplaceAllString(m, " ")
		}
		if r, err := ParseTimeRange(m, now); err == nil {
			return r, true
		}
	}
	return TimeRange{}, false
}

// comparePattern is a comparison with an earlier time: "compare with
// yesterday", "vs last week", "compared to the day before", "than a week
// ago".
var comparePattern = regexp.MustCompile(`(?i)\b(?:compare[ds]?\s+(?:it\s+|them\s+|this\s+|that\s+)?(?:with|to|against)|comparison\s+with|vs\.?|versus|than|against)\s+(?:the\s+same\s+(?:time|hours?|window)\s+)?(yesterday|the\s+day\s+before|a\s+day\s+ago|last\s+week|a\s+week\s+ago|the\s+week\s+before|the\s+previous\s+(?:day|week))\b`)

// Shift is how far back a comparison looks, with its words.
type Shift struct {
	By    time.Duration `json:"by"`
	Words string        `json:"words"` // "yesterday", "a week earlier"
}

// comparison finds a comparison with an earlier time in one message.
func comparison(msg string) (Shift, bool) {
	m := comparePattern.FindStringSubmatch(msg)
	if m == nil {
		return Shift{}, false
	}
	switch w := strings.ToLower(strings.Join(strings.Fields(m[1]), " ")); w {
	case "last week", "a week ago", "the week before", "the previous week":
		return Shift{By: 7 * 24 * time.Hour, Words: "a week earlier"}, true
	default:
		return Shift{By: 24 * time.Hour, Words: "the day before"}, true
	}
}

// latestComparison is the comparison the latest message asks for, if it
// asks for one.
func latestComparison(text string) (Shift, bool) {
	subject, followUps := splitFollowUps(text)
	last := subject
	if len(followUps) > 0 {
		last = followUps[len(followUps)-1]
	}
	return comparison(last)
}

// plotPattern asks for a chart of what was shown: "plot it", "chart
// that", "graph them", "show it as a chart".
var plotPattern = regexp.MustCompile(`(?i)\b(?:plot|chart|graph)\b|\bas\s+a\s+(?:chart|plot|graph)\b`)

// wantsPlot reports whether the latest message asks for a chart.
func wantsPlot(text string) bool {
	subject, followUps := splitFollowUps(text)
	last := subject
	if len(followUps) > 0 {
		last = followUps[len(followUps)-1]
	}
	return plotPattern.MatchString(last)
}
