package intent

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// A change back to the value a target had at a time the user names
// ("restore Q1 to yesterday's value", "set Q1 back to what it was 2 hours
// ago", "setze Q1 auf den Wert von gestern zurück", "remets Q1 à la valeur
// d'hier"): the value is not in the words, but the time is, so the
// framework reads it from the capability's history (capabilities.
// HistoryReader) and shows it with its time. A restore without a time
// ("undo the last change", "the previous value") stays no change: which
// earlier value is meant would be a guess.

// restoreAtPattern is the value-at-a-time phrase of a restore; its time
// phrase is one of pastTimes.
const restoreAtPattern = `(?:(?:yesterday|last week)'s (?:value|setting|setpoint|current|level)s?|` +
	`(?:the |its |their )?(?:value|setting|setpoint|level)s? (?:it had |they had |of |from )?(?:yesterday|last week|(?:\d+|an?|one|two|three) (?:hours?|minutes?|days?) ago)|` +
	`(?:what|where|how) it was (?:yesterday|last week|(?:\d+|an?|one|two|three) (?:hours?|minutes?|days?) ago)|` +
	`(?:den |dem )?wert (?:von gestern|von letzter woche|von vor (?:\d+|einer|zwei|drei) (?:stunden?|minuten?|tagen?))|(?:den |dem )?gestrigen wert|` +
	`(?:la |sa )?valeur (?:d'hier|de la veille|de la semaine dernière|d'il y a (?:\d+|une|deux|trois) (?:heures?|minutes?|jours?)))`

// restoreAt finds the value-at-a-time phrase of a restore.
var restoreAt = regexp.MustCompile(`(?i)` + restoreAtPattern)

// setToPast: a setting verb whose value is a value-at-a-time phrase ("set
// Q1 to yesterday's value", "mets Q1 à sa valeur d'il y a 3 heures"), a
// restore without a word saying back.
var setToPast = regexp.MustCompile(`(?i)\b(?:set|put|change|return|reset|setze|stelle|stell|mets|règle|regle)\b[^.;!?]*?` + restoreAtPattern)

// restoreAsked reports a change back in lower-cased text: a restore verb,
// or a setting verb to a value at a time.
func restoreAsked(lower string) bool {
	return restoreVerbs.MatchString(lower) || setToPast.MatchString(lower)
}

var (
	pastCount = regexp.MustCompile(`(?i)(\d+|an?|one|two|three|einer|zwei|drei|une|deux|trois) (hour|minute|day|stunde|minute|tag|heure|jour)`)
	counts    = map[string]int{"a": 1, "an": 1, "one": 1, "einer": 1, "une": 1, "two": 2, "zwei": 2, "deux": 2, "three": 3, "drei": 3, "trois": 3}
	perUnit   = map[string]time.Duration{"hour": time.Hour, "stunde": time.Hour, "heure": time.Hour,
		"minute": time.Minute, "day": 24 * time.Hour, "tag": 24 * time.Hour, "jour": 24 * time.Hour}
)

// pastDuration is how long before the request a value-at-a-time phrase
// points (yesterday: 24 h; last week: 7 days; "2 hours ago").
func pastDuration(phrase string) (time.Duration, bool) {
	p := strings.ToLower(phrase)
	switch {
	case strings.Contains(p, "yesterday") || strings.Contains(p, "gestern") || strings.Contains(p, "gestrigen") ||
		strings.Contains(p, "hier") || strings.Contains(p, "veille"):
		return 24 * time.Hour, true
	case strings.Contains(p, "last week") || strings.Contains(p, "letzter woche") || strings.Contains(p, "semaine dernière"):
		return 7 * 24 * time.Hour, true
	}
	m := pastCount.FindStringSubmatch(p)
	if m == nil {
		return 0, false
	}
	n, ok := counts[m[1]]
	if !ok {
		var err error
		if n, err = strconv.Atoi(m[1]); err != nil || n <= 0 || n > 365*24 {
			return 0, false
		}
	}
	return time.Duration(n) * perUnit[m[2]], true
}

// restoreFiller are the words of a restore that are not its target.
var restoreFiller = wordSet(`ok okay can could would will you kindly just please now immediately asap thanks restore revert roll rollback set put bring change turn return reset go back to its the value values old previous ` +
	`setze stelle bringe zurück zurueck wiederherstellen zurücksetzen zuruecksetzen zurückstellen zurueckstellen auf bitte kannst du jetzt sofort danke ` +
	`remets remettre rétablis rétablir restaure restaurer mets mettre règle regle régler sur à la le sa son s'il te vous plaît plait maintenant merci`)

// datedRestore reads a restore to the value at a named time: its one
// change (the target as named, Ago), or false — with a note when the words
// hold it: the restore names its target and then asks for more ("Restore
// Q1 to yesterday's value and show Q2", "… and Q2 to 98 A": another
// request, not the target's name), or asks for another device's value
// ("Restore Q1 to Q2's value of yesterday").
func datedRestore(masked string) (RequestedChange, string, bool) {
	text := strings.ReplaceAll(masked, "’", "'")
	loc := restoreAt.FindStringIndex(text)
	if loc == nil || len(restoreAt.FindAllStringIndex(text, 2)) > 1 {
		return RequestedChange{}, "", false
	}
	ago, ok := pastDuration(text[loc[0]:loc[1]])
	if !ok {
		return RequestedChange{}, "", false
	}
	before, after := restoreWords(text[:loc[0]]), restoreWords(text[loc[1]:])
	if len(before) > 0 && len(after) > 0 || slices.ContainsFunc(after, func(w string) bool {
		w = strings.ToLower(w)
		return readVerbs[w] || verbOf(w) != "" // "Restore yesterday's value of Q1 and show Q2"
	}) {
		return RequestedChange{}, "Your message asks to go back to an earlier value and for more after it (\"" + shorten(strings.TrimSpace(text[loc[1]:])) + "\"), " +
			"so nothing will be changed: ask for the change back on its own, for example \"restore Q1 to yesterday's value\", and for the rest in another message.", false
	}
	kept := append(before, after...)
	if len(kept) == 0 {
		return RequestedChange{}, "", false
	}
	target := strings.Join(kept, " ")
	if owner := slices.IndexFunc(kept, func(w string) bool {
		base, ok := strings.CutSuffix(w, "'s")
		return ok && len(statedIdentifiers(base)) > 0
	}); owner >= 0 && len(distinctNames(target)) > 1 {
		// "Restore Q1 to Q2's value of yesterday": another device's value,
		// which a restore does not read (each target is set to its own).
		return RequestedChange{}, "Your message asks for another device's earlier value (\"" + kept[owner] + "\"), which a change back does not read " +
			"(each device goes back to its own), so nothing will be changed: look up the value, then ask for it, for example \"set Q1 to 92 A\".", false
	}
	return RequestedChange{Target: target, Ago: ago}, "", true
}

// restoreWords are the words of a part of a restore that may name its
// target: without the restore's fillers, and without joining words at its
// ends ("of Q1" is "Q1").
func restoreWords(s string) []string {
	var kept []string
	for _, w := range strings.Fields(s) {
		if !restoreFiller[strings.ToLower(strings.Trim(w, ".,;:!"))] {
			kept = append(kept, strings.Trim(w, ".,;:!"))
		}
	}
	for len(kept) > 0 && joinerWord(kept[0]) {
		kept = kept[1:]
	}
	for len(kept) > 0 && joinerWord(kept[len(kept)-1]) {
		kept = kept[:len(kept)-1]
	}
	return kept
}

// joinerWord: a word that only joins ("of", "for", "von", "de").
func joinerWord(w string) bool {
	switch strings.ToLower(w) {
	case "of", "for", "from", "and", "the", "von", "vom", "des", "der", "den", "de", "du", "d'", "et", "und":
		return true
	}
	return false
}

// restoreText says a dated restore: "its value 24h0m0s ago" reads badly,
// so "its value of yesterday", "its value 2 hours ago".
func restoreText(ago time.Duration) string {
	switch {
	case ago == 24*time.Hour:
		return "its value of yesterday"
	case ago == 7*24*time.Hour:
		return "its value of last week"
	case ago%(24*time.Hour) == 0:
		return "its value " + strconv.Itoa(int(ago/(24*time.Hour))) + " days ago"
	case ago%time.Hour == 0:
		return "its value " + plural(int(ago/time.Hour), "hour") + " ago"
	}
	return "its value " + plural(int(ago/time.Minute), "minute") + " ago"
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// restoreNotAsked reports a restore the message does not ask for: the
// clause with the restore verb is a question ("did you restore Q1 to
// yesterday's value", "can Q1 be set back to what it was yesterday?") or
// says not to ("don't restore…", "setze Q1 nicht zurück", "ne remets pas").
func restoreNotAsked(msg string, clauses []clause) bool {
	for _, c := range clauses {
		text := strings.ToLower(span(msg, c.toks))
		if !restoreAsked(text) {
			continue
		}
		for i, t := range c.toks {
			if negationWords[t.w] || strings.HasPrefix(t.w, "n'") || t.w == "not" || t.w == "don't" || t.w == "never" || t.w == "pas" ||
				t.w == "do" && i+1 < len(c.toks) && c.toks[i+1].w == "not" {
				return true
			}
		}
		return readClause(msg, c).question != notQuestion || !imperativeRestore(c.toks)
	}
	return false
}

// restoreStarts are the words an imperative restore starts with (after
// fillers and a polite opener), besides the change verbs; restoreEnds the
// German infinitives that end one ("Bitte Q1 auf den Wert von gestern
// zurücksetzen").
var (
	restoreStarts = wordSet(`restore revert roll undo go rétablis rétablissez rétablir retablis remets remettez remettre restaure restaurez restaurer`)
	restoreEnds   = wordSet(`zurücksetzen zuruecksetzen wiederherstellen zurückstellen zurueckstellen`)
)

// imperativeRestore: the clause tells the agent to go back ("restore Q1…",
// "can you set Q1 back…", "setze Q1 … zurück"), not says someone did or
// should ("I restored Q1…", "we should restore…").
func imperativeRestore(ws []token) bool {
	i := 0
	for i < len(ws) && fillers[ws[i].w] && !restoreStarts[ws[i].w] {
		i++
	}
	for _, p := range politeOpeners {
		if hasPrefixWords(ws[i:], p) {
			i += len(p)
			for i < len(ws) && fillers[ws[i].w] {
				i++
			}
			break
		}
	}
	if i < len(ws) && (restoreStarts[ws[i].w] || verbOf(ws[i].w) != "") {
		return true
	}
	return len(ws) > 0 && restoreEnds[ws[len(ws)-1].w]
}

// restoreClause is the text of the clause with the restore verb, and
// where it starts in msg: its target is named there ("restore Q1 to
// yesterday's value, the tune was better" restores Q1).
func restoreClause(msg string, clauses []clause) (text string, start int) {
	for _, c := range clauses {
		if text := span(msg, c.toks); restoreAsked(strings.ToLower(text)) {
			return text, c.toks[0].start
		}
	}
	return "", 0
}

// atText is the time a dated restore points to, once fixed:
// " (2026-11-26 09:30 UTC)".
func (c RequestedChange) atText() string {
	if c.At.IsZero() {
		return ""
	}
	return " (" + c.At.UTC().Format("2006-01-02 15:04 MST") + ")"
}

// pastQuantity is target's value at time at, from the readings of its
// history among rs (capabilities.Reading.At).
func pastQuantity(rs []capabilities.Reading, target string, at time.Time) (quantity, bool) {
	for _, r := range rs {
		if r.Target != target || r.At.IsZero() || !r.At.Equal(at) {
			continue
		}
		v, ok := number(r.Value)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return quantity{}, false
		}
		return quantity{v, CanonicalUnit(r.Unit)}, true
	}
	return quantity{}, false
}

func hasPast(rs []capabilities.Reading, target string, at time.Time) bool {
	_, ok := pastQuantity(rs, target, at)
	return ok
}
