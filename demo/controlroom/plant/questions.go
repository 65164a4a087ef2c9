package plant

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// Questions an operator asks that want more than a list of values: how
// many there are ("how many quads are in the ring"), whether something is
// all right ("is the beam ok?"), and actions the application does not
// offer ("turn off the RF"). Each is read from the latest message of the
// request (a follow-up's own words).

// latestMessage is the request's latest message: the last follow-up, or
// the text itself.
func latestMessage(text string) string {
	subject, followUps := splitFollowUps(text)
	if len(followUps) > 0 {
		return strings.TrimSpace(followUps[len(followUps)-1])
	}
	return subject
}

var (
	countPattern   = regexp.MustCompile(`(?i)\bhow\s+many\b|\bnumber\s+of\b|^\s*count\b`)
	verdictPattern = regexp.MustCompile(`(?i)^\s*(?:(?:so|and|but|ok|okay),?\s+)?(?:is|are|was|were|does|do|looks?)\b.*\b(?:ok|okay|fine|normal|good|healthy|alright|all\s+right|stable|in\s+range|within\s+(?:limits|range|spec)|in\s+spec)\b` +
		`|\bany\s+(?:problems?|issues?|alarms?|trouble|warnings?)\b|\bhow\s+(?:is|are)\b.*\bdoing\b|\b(?:status|health)\s+of\b|\banything\s+wrong\b`)
	// actionPattern: an imperative the application has no action for —
	// switching something on or off, starting, stopping, resetting,
	// opening or closing it.
	actionPattern = regexp.MustCompile(`(?i)^\s*(?:please\s+|pls\s+|kindly\s+|(?:can|could|would)\s+you\s+(?:please\s+)?)?` +
		`(?:(?:turn|switch|power|shut)\b.*\b(?:on|off|down|up)\b|(?:start|stop|restart|reboot|reset|open|close|enable|disable|trip|kill|abort|dump|inject|cycle|ramp\s+down)\b)`)
)

// Words one of which every match of a pattern holds: a text without any
// is not matched, and the pattern is not run (a tenth of the channel
// capabilities' time under load).
var (
	countWords   = []string{"many", "number", "count"}
	verdictWords = []string{"ok", "fine", "normal", "good", "health", "alright", "all", "stable", "range", "spec", "limits",
		"any", "doing", "status"}
)

// isCount reports whether a request asks how many channels there are.
func isCount(text string) bool {
	m := latestMessage(text)
	return mayMatch(m, countWords) && countPattern.MatchString(m)
}

// isVerdict reports whether a request asks whether something is all right.
func isVerdict(text string) bool {
	m := latestMessage(text)
	return mayMatch(m, verdictWords) && verdictPattern.MatchString(m)
}

// mayMatch reports whether text holds one of words (lower case, ASCII) in
// any case, as a (?i) pattern compares them: U+212A (Kelvin) is a k and
// U+017F (long s) an s there too.
func mayMatch(text string, words []string) bool {
	lower := strings.ToLower(text) // maps U+212A to k
	if strings.Contains(lower, "ſ") {
		lower = strings.ReplaceAll(lower, "ſ", "s")
	}
	for _, w := range words {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// unsupportedAction returns the request's latest message when it asks for
// an action the application does not offer ("" otherwise). Setting a
// value is offered ("set", "change", "raise"…), so only the verbs of
// actions without a value are here.
func unsupportedAction(text string) string {
	m := latestMessage(text)
	if !actionPattern.MatchString(m) {
		return ""
	}
	return strings.TrimRight(strings.TrimSpace(m), ".!?")
}

// offered says what the control-room application can do, for a request
// it cannot carry out.
const offered = "It can read a channel's present value, retrieve its history over a time range (and compare it with yesterday or last week, or plot it), " +
	"count channels, say whether a system is within its normal ranges, and set a writable channel to a value after your approval " +
	"(for example \"Set the RF cavity 1 voltage to 590 kV\")."

// notOffered is the answer to an action the application does not offer.
func notOffered(action string) string {
	return fmt.Sprintf("%q is not an action this application offers: it switches nothing on or off and starts, stops or resets nothing. %s", action, offered)
}

// groupNames compresses a list of channel names by pattern: the names
// with their numbers replaced by "#", each with how many there are, in
// first-seen order ("SR:C##:QD:CURRENT ×12").
func groupNames(names []string) []string {
	counts := map[string]int{}
	var order []string
	for _, n := range names {
		p := digits.ReplaceAllStringFunc(n, func(d string) string { return strings.Repeat("#", len(d)) })
		if counts[p] == 0 {
			order = append(order, p)
		}
		counts[p]++
	}
	out := make([]string, 0, len(order))
	for _, p := range order {
		if counts[p] == 1 {
			// A pattern of one is the name itself.
			for _, n := range names {
				if digits.ReplaceAllStringFunc(n, func(d string) string { return strings.Repeat("#", len(d)) }) == p {
					out = append(out, n)
					break
				}
			}
			continue
		}
		out = append(out, fmt.Sprintf("%s ×%d", p, counts[p]))
	}
	return out
}

var digits = regexp.MustCompile(`[0-9]+`)

// VerdictReport is a verdict on the values read: whether every channel
// with normal ranges is normal, which are not, and the values that back
// it.
type VerdictReport struct {
	// Subject is what was asked about ("beam").
	Subject string `json:"subject"`
	// Verdict is the worst of the judged channels' verdicts.
	Verdict capabilities.Verdict `json:"verdict"`
	// Judged counts the channels with ranges; Unjudged the others.
	Judged   int `json:"judged"`
	Unjudged int `json:"unjudged"`
	// Off lists the channels not normal, worst first.
	Off []JudgedValue `json:"off,omitempty"`
	// Key are the judged channels that stand alone (not one of a family
	// such as the BPMs), for the answer to show with their ranges.
	Key []JudgedValue `json:"key,omitempty"`
	// Families summarise the judged channels of one pattern: how many,
	// all normal or not, the value farthest from the middle of the range.
	Families []Family `json:"families,omitempty"`
}

// JudgedValue is one channel's value with its verdict and ranges.
type JudgedValue struct {
	Channel string               `json:"channel"`
	Text    string               `json:"text"`
	Verdict capabilities.Verdict `json:"verdict"`
	Ranges  string               `json:"ranges"`
}

// Family is the judged channels of one name pattern.
type Family struct {
	Pattern string `json:"pattern"`
	Count   int    `json:"count"`
	Normal  int    `json:"normal"`
	// Extreme is the family's value farthest from zero (BPMs) or highest
	// (pressures, temperatures).
	Extreme JudgedValue `json:"extreme"`
}

var verdictRank = map[capabilities.Verdict]int{capabilities.VerdictNormal: 0, capabilities.VerdictWarning: 1, capabilities.VerdictAlarm: 2}

// judge makes the verdict on values read for subject.
func (p *Plant) judge(subject string, values []ChannelValue) VerdictReport {
	v := VerdictReport{Subject: subject, Verdict: capabilities.VerdictNormal}
	byPattern := map[string][]JudgedValue{}
	var patterns []string
	for _, cv := range values {
		c, ok := p.Channel(cv.Channel)
		if !ok || c.Ranges == nil {
			v.Unjudged++
			continue
		}
		v.Judged++
		jv := JudgedValue{Channel: cv.Channel, Text: cv.Text, Verdict: c.Ranges.Judge(cv.Value), Ranges: c.Ranges.Describe(func(x float64) string {
			return c.FormatWithUnits(x)
		})}
		if verdictRank[jv.Verdict] > verdictRank[v.Verdict] {
			v.Verdict = jv.Verdict
		}
		if jv.Verdict != capabilities.VerdictNormal {
			v.Off = append(v.Off, jv)
		}
		pat := digits.ReplaceAllStringFunc(cv.Channel, func(d string) string { return strings.Repeat("#", len(d)) })
		if _, seen := byPattern[pat]; !seen {
			patterns = append(patterns, pat)
		}
		byPattern[pat] = append(byPattern[pat], jv)
	}
	sort.SliceStable(v.Off, func(i, j int) bool { return verdictRank[v.Off[i].Verdict] > verdictRank[v.Off[j].Verdict] })
	// The machine's own order: the beam current before the tunes.
	order := map[string]int{}
	for i, n := range p.listed {
		order[n] = i
	}
	values = slices.Clone(values)
	for _, pat := range patterns {
		js := byPattern[pat]
		if len(js) < 4 {
			v.Key = append(v.Key, js...)
			continue
		}
		f := Family{Pattern: pat, Count: len(js)}
		far := -1.0
		for _, j := range js {
			if j.Verdict == capabilities.VerdictNormal {
				f.Normal++
			}
			for _, cv := range values {
				if cv.Channel == j.Channel && abs(cv.Value) > far {
					far, f.Extreme = abs(cv.Value), j
				}
			}
		}
		v.Families = append(v.Families, f)
	}
	sort.SliceStable(v.Key, func(i, j int) bool { return order[v.Key[i].Channel] < order[v.Key[j].Channel] })
	return v
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Summary says the verdict first, then the values that back it.
func (v VerdictReport) Summary() string {
	var b strings.Builder
	switch {
	case v.Judged == 0:
		fmt.Fprintf(&b, "No verdict on %q: none of its %d channels has normal ranges to judge it by", v.Subject, v.Unjudged)
		return b.String()
	case v.Verdict == capabilities.VerdictNormal:
		fmt.Fprintf(&b, "Verdict: %s is OK — all %d channels with normal ranges are within them", upperFirst(v.Subject), v.Judged)
	default:
		fmt.Fprintf(&b, "Verdict: %s is NOT OK — %d of %d channels are outside their normal ranges (%s)", upperFirst(v.Subject), len(v.Off), v.Judged, v.Verdict)
		for _, o := range v.Off {
			fmt.Fprintf(&b, "; %s = %s: %s (%s)", o.Channel, o.Text, o.Verdict, o.Ranges)
		}
	}
	for _, k := range v.Key {
		fmt.Fprintf(&b, "; %s = %s (%s)", k.Channel, k.Text, k.Ranges)
	}
	for _, f := range v.Families {
		fmt.Fprintf(&b, "; %s: %d of %d normal, farthest %s = %s (%s)", f.Pattern, f.Normal, f.Count, f.Extreme.Channel, f.Extreme.Text, f.Extreme.Ranges)
	}
	if v.Unjudged > 0 {
		fmt.Fprintf(&b, "; %d more channels have no normal ranges and are not judged", v.Unjudged)
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return "it"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// subject names what a request asks about, in its own words ("the beam",
// "the vacuum sector 3").
func (p *Plant) subject(text string) string {
	words := displayWords(p.index.details(p.ResolveFollowUps(text)))
	if len(words) == 0 {
		return "it"
	}
	return "the " + strings.Join(words, " ")
}
