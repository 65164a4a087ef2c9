package intent

import (
	"slices"
	"strings"
)

// FromAnswer is the intent of a user's answer to the assistant's question
// about the user's message before it (a clarification: "Which quadrupole?",
// "To what value?"). An answer that asks something of its own is read as
// any message (FromMessages). Otherwise, when the message before asked one
// change and the answer only names its device ("Q1", "the BTS Q1"), the
// change is that one on the named device; when the message before asked a
// change without its value ("Set Q1") and the answer only gives one ("105
// A", "to 105 A", "by 5 A"), the change is the message with that value.
// Both are the user's own words; a question, a value for a change that has
// a direction of its own ("Raise Q1" then "5 A": to or by?) or a second
// device or value is no change.
func FromAnswer(answer string, earlier []string) Finding {
	f := FromMessages(answer, earlier)
	if f.Intent.IsChange() || len(earlier) == 0 || f.Reason != ReasonNoChange || len(strings.Fields(answer)) > 8 {
		return f
	}
	masked, _ := maskReported(unmark(answer))
	text := strings.Trim(strings.TrimSpace(masked), ".!")
	clauses := scan(text)
	if len(clauses) == 0 || slices.ContainsFunc(clauses, func(c clause) bool {
		return slices.ContainsFunc(c.toks, func(t token) bool {
			return negationWords[t.w] || afterNegations[t.w] || questionWords[t.w] || readVerbs[t.w] || verbOf(t.w) != "" || copulas[t.w] || stateWords[t.w]
		})
	}) {
		return f
	}
	core := answerCore(text, clauses) // the answer without "ok", "please"
	prevText := earlier[len(earlier)-1]
	prev := FromMessages(prevText, earlier[:len(earlier)-1])
	var changes []RequestedChange
	switch value := answerValue(text, clauses); {
	case prev.Intent.IsChange() && len(prev.Intent.Changes) == 1 && value == "" && len(statedIdentifiers(core)) > 0:
		c := prev.Intent.Changes[0]
		c.Target, c.Refers = core, ""
		changes = []RequestedChange{c}
	case prev.Reason == ReasonUnclear && value != "" && len(statedIdentifiers(core)) == 0:
		marker, _, _ := strings.Cut(strings.ToLower(value), " ")
		if !toMarkers[marker] && !byMarkers[marker] {
			if dirOf(prevText) != 0 {
				// "Raise Q1" then "5 A": to 5 A or by 5 A?
				in := Intent{Kind: KindRead, Note: "Your answer gives a value (\"" + shorten(core) + "\") without saying whether it is the new value or the amount of the change, " +
					"so nothing will be changed: say \"to " + value + "\" or \"by " + value + "\"."}
				return Finding{Intent: in, Reason: ReasonOpenValue}
			}
			value = "to " + value
		}
		g := FromMessage(strings.TrimRight(strings.TrimSpace(prevText), ".!") + " " + value)
		if !g.Intent.IsChange() || len(g.Intent.Changes) != 1 {
			return f
		}
		changes = g.Intent.Changes
	default:
		return f
	}
	norm := strings.ReplaceAll(strings.ToLower(masked), "’", "'")
	if held, ok := heldBack(answer, masked, norm, scan(masked), changes, 0); ok {
		return held
	}
	if isLater(masked, norm, scan(masked), 0) {
		return laterFinding
	}
	return Finding{Intent: Intent{Kind: KindChange, Changes: changes}, Reason: ReasonAnswer}
}

// answerCore is an answer's words without the fillers around them ("ok,
// Q1, please" is "Q1").
func answerCore(text string, clauses []clause) string {
	var ts []token
	for _, c := range clauses {
		ts = append(ts, c.toks...)
	}
	for len(ts) > 0 && fillers[ts[0].w] {
		ts = ts[1:]
	}
	for len(ts) > 0 && (fillers[ts[len(ts)-1].w] || ts[len(ts)-1].w == "thanks" || ts[len(ts)-1].w == "danke" || ts[len(ts)-1].w == "merci") {
		ts = ts[:len(ts)-1]
	}
	return span(text, ts)
}

// answerValue is the value an answer gives, with its marker if it has one
// ("105 A", "to 105 A", "by 5 A"): the whole answer, one number with a
// unit. "" otherwise.
func answerValue(text string, clauses []clause) string {
	var ts []token
	for _, c := range clauses {
		if !slices.ContainsFunc(c.toks, func(t token) bool { return !fillers[t.w] }) {
			continue // "ok, 105 A"
		}
		if ts != nil {
			return ""
		}
		ts = c.toks
	}
	for len(ts) > 0 && fillers[ts[0].w] {
		ts = ts[1:]
	}
	for len(ts) > 0 && fillers[ts[len(ts)-1].w] {
		ts = ts[:len(ts)-1] // "105 A please"
	}
	if len(ts) == 0 {
		return ""
	}
	start := ts[0].start
	if toMarkers[ts[0].w] || byMarkers[ts[0].w] {
		ts = ts[1:]
	}
	if len(ts) == 0 || !startsNumber(ts[0].w) || clockLike(text, ts[0]) || !numberToken(text, ts[0]) {
		return ""
	}
	_, unit, ok := ParseQuantity(text[ts[0].start:])
	if !ok || unit == "" || timeWords[strings.ToLower(unit)] || valueWidth(ts, 0, unit) != len(ts) {
		return ""
	}
	return text[start:ts[len(ts)-1].end]
}

// dirOf is the direction the change verb of a message gives an amount:
// +1, -1, or 0 ("set").
func dirOf(msg string) float64 {
	for _, c := range scan(strings.ToLower(msg)) {
		for _, t := range c.toks {
			if v := verbOf(t.w); v != "" {
				return direction(v, c.toks)
			}
		}
	}
	return 0
}
