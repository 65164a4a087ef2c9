package nodes

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/capgraph/capgraph/state"
)

// The offline intent rules: whether a user message asks to read, to change
// or hypothetically, and for a change what to set to which value. They are
// deliberately conservative: a change is an imperative change verb ("set",
// "change", "ramp", "turn off"…, typos tolerated) at the start of a clause,
// or after a polite opener ("can you", "please", "I want you to"), with a
// value ("to 105 A", "by 5 A") or an on/off. Questions, history,
// hypotheticals ("what would happen if…", "should I…") and negations ("don't
// change anything", "without changing") are never changes. The section
// "Intent before action" of docs/safety.md lists the rules.

// intentFinding is what the offline rules found in a message.
type intentFinding struct {
	intent state.Intent
	// firm: the message says explicitly that nothing is to change (a
	// negated change, a hypothetical, a question). It overrides a model that
	// read a change into it.
	firm bool
	// reason names the rule that decided, for events and tests.
	reason string
}

// Reasons the offline rules give.
const (
	reasonNegated      = "negated: the message says not to change anything"
	reasonHypothetical = "hypothetical: the message asks what would happen or whether to change"
	reasonQuestion     = "question: the message asks about something"
	reasonChange       = "change: an imperative change with a value or an on/off"
	reasonContinuation = "change: continues the previous message's change"
	reasonNoChange     = "read: no imperative change with a value"
)

// token is one word of a message, lower-cased, with its place in the
// original text (targets are reported as the user wrote them).
type token struct {
	w          string
	start, end int
}

// clause is a run of tokens between punctuation.
type clause struct {
	toks     []token
	question bool // ended by "?"
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == '_'
}

// scan splits a message into clauses of tokens. ':', '.', '-', '/' inside a
// word stay in it ("SR:RF:CAV2:VOLT", "105.5", "read-only"); a sign or point
// before a digit starts a number; "=", "→" and "->" are tokens.
func scan(msg string) []clause {
	var (
		out []clause
		cur clause
	)
	flush := func(q bool) {
		if len(cur.toks) > 0 {
			cur.question = q
			out = append(out, cur)
		}
		cur = clause{}
	}
	runeAt := func(i int) rune {
		if i < 0 || i >= len(msg) {
			return 0
		}
		r, _ := utf8.DecodeRuneInString(msg[i:])
		return r
	}
	for i := 0; i < len(msg); {
		r, size := utf8.DecodeRuneInString(msg[i:])
		next := runeAt(i + size)
		switch {
		case isWordRune(r) || (r == '-' || r == '+' || r == '.') && unicode.IsDigit(next):
			j := i + size
			for j < len(msg) {
				r2, s2 := utf8.DecodeRuneInString(msg[j:])
				n2 := runeAt(j + s2)
				if isWordRune(r2) || strings.ContainsRune(":.-/", r2) && (unicode.IsLetter(n2) || unicode.IsDigit(n2)) {
					j += s2
					continue
				}
				break
			}
			w := strings.ReplaceAll(strings.ToLower(msg[i:j]), "’", "'")
			cur.toks = append(cur.toks, token{w: w, start: i, end: j})
			i = j
			continue
		case r == '-' && next == '>':
			cur.toks = append(cur.toks, token{w: "->", start: i, end: i + 2})
			i += 2
			continue
		case r == '=' || r == '→':
			cur.toks = append(cur.toks, token{w: "=", start: i, end: i + size})
		case r == '?':
			flush(true)
		case strings.ContainsRune(".!;,\n:—–()", r):
			flush(false)
		}
		i += size
	}
	flush(false)
	return out
}

// Word lists of the rules (lower case; "'" for any apostrophe).
var (
	// valueVerbs change a setting to a value: a change only with "to/at/=
	// <number>", "by <number>" or (some) "up"/"down".
	valueVerbs = wordSet(`set change adjust raise lower increase decrease reduce bump ramp write modify alter tweak trim
		put bring move drop boost step crank dial turn switch power`)
	// particleVerbs are changes with "up"/"down" (ramp up) or "on"/"off" (turn off) alone.
	particleVerbs = wordSet(`ramp bump step crank dial turn switch power shut`)
	// toggleVerbs are changes on their own.
	toggleVerbs = wordSet(`enable disable`)
	// typoTolerant are verbs long enough that one typo cannot make another
	// common word of them (distance 1, see nearWord).
	typoTolerant = wordSet(`change adjust raise increase decrease reduce modify tweak boost write enable disable switch`)
	// knownTypos of short verbs, where distance 1 would reach real words
	// ("get", "let", "sit").
	knownTypos = map[string]string{"sett": "set", "sset": "set", "swt": "set", "sst": "set", "rmap": "ramp", "rapm": "ramp",
		"trun": "turn", "tunr": "turn", "tirn": "turn", "lowr": "lower", "lwoer": "lower", "loewr": "lower", "mvoe": "move",
		"dorp": "drop", "bmup": "bump", "chnage": "change", "cahnge": "change", "chagne": "change", "chane": "change"}
	// notVerbs are words one typo away from a verb that are words of their own.
	notVerbs = wordSet(`chance charge changes changed raised raises arise lowered lowers increased increases decreased
		decreases reduced reduces modified modifies tweaks tweaked boosts boosted writes wrote written unable enables
		enabled disables disabled switches switched adjusts adjusted after`)
	// readVerbs start an imperative that reads (a later change verb after
	// "and" still counts: "read Q1 and set it to 105 A").
	readVerbs = wordSet(`read show tell check get give plot display list find look fetch report compare verify confirm
		monitor watch print describe explain summarize summarise graph chart retrieve query`)
	// fillers may come before an imperative verb.
	fillers = wordSet(`ok okay so hey hi hello well alright right now then also and but please pls plz kindly just quickly
		again yes yeah sure oh um uh actually first go ahead agent capgraph`)
	// questionWords start a question.
	questionWords = wordSet(`what whats what's wat wht waht whta which who whose whom when where why how hows how's is isn't
		isnt are aren't arent was wasn't wasnt were weren't do does doesn't doesnt did didn't didnt has hasn't have haven't
		had will won't would could can can't cant should shall may might must am`)
	// negations before a change word make the message read-only.
	negationWords = wordSet(`don't dont not never no without nothing none avoid stop cannot can't cant won't shouldn't mustn't`)
	// changeWords are the forms of changing a negation may refer to.
	changeWords = wordSet(`change changes changing changed set setting write writing written wrote modify modifying
		modified touch touching touched adjust adjusting adjusted alter altering altered move moving moved
		tweak tweaking tweaked raise raising lower lowering increase increasing decrease decreasing ramp ramping
		writes sets`)
	// presentation nouns: "set the range to 2 hours" changes the answer, not the machine.
	presentationNouns = wordSet(`range plot chart graph axis view page display format zoom window timespan timeframe
		interval period resolution precision decimals language`)
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// hypotheticalPattern: "what would happen", "what if", "should I",
// "is it safe to", "if I set…", "how do I…" — a change considered, not asked.
var hypotheticalPattern = regexp.MustCompile(`\b(?:what (?:would|will|might|could)\b|what happens|what if|` +
	`would (?:it|that|this|the|there|we|i)\b|will (?:it|that|this) (?:trip|break|affect|cause|damage|hurt|change|be)|` +
	`hypothetic\w*|suppose|supposing|imagine|in theory|theoretically|` +
	`if (?:i|we|you|someone|somebody|one|they) (?:were to|was to|did|\w+ed|set|change|raise|lower|increase|decrease|ramp|adjust|write|turn|switch)\b|` +
	`\b(?:were|was|is|got) (?:set|changed|raised|lowered|increased|decreased|ramped|adjusted) to\b.*\b(?:would|will|what)\b|` +
	`(?:should|shall|can|could|may|might|must) (?:i|we)\b|do (?:i|we) (?:need|have) to|` +
	`is it (?:safe|ok|okay|alright|possible|allowed|wise|fine|a good idea|better|necessary) to|` +
	`would it be|how (?:would|do|can|could|should|to) (?:i|we|you|one)?\b)`)

// readOnlyPattern: explicit statements that nothing is to change.
var readOnlyPattern = regexp.MustCompile(`\b(?:read[- ]?only|dry[- ]?run|just (?:looking|checking|curious|asking)|` +
	`leave (?:it|everything|things|them|that|the \w+) (?:as|alone|where)|hands off)\b`)

// offlineIntent applies the rules to one user message.
func offlineIntent(msg string) intentFinding {
	norm := strings.ReplaceAll(strings.ToLower(msg), "’", "'")
	clauses := scan(msg)
	if negatedChange(clauses) || readOnlyPattern.MatchString(norm) {
		return intentFinding{intent: state.Intent{Kind: state.IntentRead}, firm: true, reason: reasonNegated}
	}
	if hypotheticalPattern.MatchString(norm) {
		return intentFinding{intent: state.Intent{Kind: state.IntentHypothetical}, firm: true, reason: reasonHypothetical}
	}
	var (
		changes  []state.RequestedChange
		changed  bool
		question bool
		firm     bool // a question in English words, not only a "?"
		prev     bool // the clause before was a change: a verbless "and Q2 to 98 A" continues it
	)
	for _, c := range clauses {
		cs, isChange, isQuestion, verbless := clauseIntent(msg, c)
		switch {
		case isChange:
			changes = append(changes, cs...)
			changed, prev = true, true
			continue
		case isQuestion == firmQuestion:
			question, firm = true, true
		case isQuestion == markedQuestion:
			question = true
		case verbless && prev:
			if more, ok := valueChanges(msg, c.toks); ok {
				changes = append(changes, more...)
				continue
			}
		}
		prev = false
	}
	if changed {
		return intentFinding{intent: state.Intent{Kind: state.IntentChange, Changes: changes}, reason: reasonChange}
	}
	if question {
		return intentFinding{intent: state.Intent{Kind: state.IntentRead}, firm: firm, reason: reasonQuestion}
	}
	return intentFinding{intent: state.Intent{Kind: state.IntentRead}, reason: reasonNoChange}
}

// negatedChange: a negation followed within four words by a change word
// ("don't change anything", "without changing", "no changes", "do not
// touch"), in one clause.
func negatedChange(clauses []clause) bool {
	for _, c := range clauses {
		for i, t := range c.toks {
			if !negationWords[t.w] && !(t.w == "do" && i+1 < len(c.toks) && c.toks[i+1].w == "not") {
				continue
			}
			if i+1 < len(c.toks) && c.toks[i+1].w == "forget" {
				continue // "don't forget to set…" asks for it
			}
			for j := i + 1; j < len(c.toks) && j <= i+5; j++ {
				if changeWords[c.toks[j].w] {
					return true
				}
			}
		}
	}
	return false
}

// verbOf returns the change verb a word is, typos tolerated, or "".
func verbOf(w string) string {
	if valueVerbs[w] || toggleVerbs[w] || particleVerbs[w] {
		return w
	}
	if v, ok := knownTypos[w]; ok {
		return v
	}
	if notVerbs[w] || len(w) < 5 {
		return ""
	}
	for v := range typoTolerant {
		if nearWord(w, v) {
			return v
		}
	}
	return ""
}

// nearWord reports an edit distance of exactly one (a letter added, dropped,
// changed, or two neighbours swapped), excluding inflections ("changes").
func nearWord(w, v string) bool {
	if w == v || w == v+"s" || w == v+"d" || w == v+"ed" || w == v+"es" || w == v+"r" {
		return false
	}
	a, b := []rune(w), []rune(v)
	if d := len(a) - len(b); d < -1 || d > 1 {
		return false
	}
	return damerau(a, b) == 1
}

// damerau is the optimal string alignment distance.
func damerau(a, b []rune) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range b {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// politeOpeners come before an imperative: "can you", "I want you to".
var politeOpeners = [][]string{
	{"can", "you"}, {"could", "you"}, {"would", "you"}, {"will", "you"}, {"can", "u"}, {"could", "u"}, {"would", "u"},
	{"i", "want", "you", "to"}, {"i", "need", "you", "to"}, {"i'd", "like", "you", "to"}, {"i", "would", "like", "you", "to"},
	{"id", "like", "you", "to"}, {"i", "want", "to"}, {"i'd", "like", "to"}, {"id", "like", "to"}, {"i", "would", "like", "to"},
	{"i", "need", "to"}, {"we", "need", "to"}, {"we", "want", "to"}, {"let's"}, {"lets"}, {"let", "us"},
	{"don't", "forget", "to"}, {"dont", "forget", "to"}, {"do", "not", "forget", "to"}, {"remember", "to"}, {"make", "sure", "to"},
}

// questionKind says how a clause is a question.
type questionKind int

const (
	notQuestion    questionKind = iota
	firmQuestion                // starts with a question word: "is Q1 above 100 A?"
	markedQuestion              // only ends with "?": "Q1 to 105 A?"; a model may know better
)

// clauseIntent classifies one clause. A change verb counts at the start of
// the clause (after fillers and a polite opener) or after "and"/"then"/
// "please", and only in a clause that is not a question: "can you set…" is
// a request, "is Q1 set to…" a question. A request ending in "?" that is
// not polite ("set Q1 to 105 A?") is uncertain and counts as no change.
func clauseIntent(msg string, c clause) (changes []state.RequestedChange, isChange bool, isQuestion questionKind, verbless bool) {
	ws := c.toks
	i := 0
	for i < len(ws) && fillers[ws[i].w] {
		i++
	}
	polite := false
	start := i
	for _, p := range politeOpeners {
		if hasPrefixWords(ws[i:], p) {
			polite = true
			start = i + len(p)
			for start < len(ws) && (ws[start].w == "please" || ws[start].w == "pls" || ws[start].w == "kindly" || ws[start].w == "just") {
				start++
			}
			break
		}
	}
	if i < len(ws) && questionWords[ws[i].w] && !polite {
		return nil, false, firmQuestion, false
	}
	if c.question && !polite {
		// "Q1 above 100 A?": a question; "set Q1 to 105 A?": uncertain.
		return nil, false, markedQuestion, false
	}
	positions := []int{start}
	for k := start + 1; k < len(ws); k++ {
		switch ws[k-1].w {
		case "and", "then", "please", "pls", "also":
			positions = append(positions, k)
		}
	}
	verbless = true
	for n, p := range positions {
		if p >= len(ws) {
			continue
		}
		v := verbOf(ws[p].w)
		if v == "" {
			if readVerbs[ws[p].w] {
				verbless = false
			}
			continue
		}
		verbless = false
		end := len(ws)
		for _, q := range positions[n+1:] {
			if q < len(ws) && (verbOf(ws[q].w) != "" || readVerbs[ws[q].w]) {
				end = q - 1 // drop the "and" before it
				break
			}
		}
		if cs, ok := verbChanges(msg, v, ws[p+1:max(end, p+1)]); ok {
			changes = append(changes, cs...)
			isChange = true
		}
	}
	return changes, isChange, notQuestion, verbless
}

func hasPrefixWords(ws []token, p []string) bool {
	if len(ws) < len(p) {
		return false
	}
	for k, w := range p {
		if ws[k].w != w {
			return false
		}
	}
	return true
}

// verbChanges reads what a change verb changes from the words after it.
func verbChanges(msg, verb string, rest []token) ([]state.RequestedChange, bool) {
	if toggleVerbs[verb] {
		return []state.RequestedChange{{Target: span(msg, rest)}}, len(rest) > 0
	}
	if cs, ok := valueChanges(msg, rest); ok {
		return cs, true
	}
	if rc, ok := valueFirst(msg, rest); ok {
		return []state.RequestedChange{rc}, true
	}
	if particleVerbs[verb] {
		for k, t := range rest {
			if k > 5 {
				break
			}
			switch t.w {
			case "on", "off":
				if verb == "shut" && t.w == "on" {
					continue
				}
				return []state.RequestedChange{{Target: span(msg, slices.Delete(slices.Clone(rest), k, k+1))}}, true
			case "up", "down":
				if verb == "turn" || verb == "switch" || verb == "power" || verb == "shut" || verb == "ramp" || verb == "bump" || verb == "step" || verb == "crank" || verb == "dial" {
					return []state.RequestedChange{{Target: span(msg, slices.Delete(slices.Clone(rest), k, k+1))}}, true
				}
			}
		}
	}
	return nil, false
}

// valueChanges reads "<target> to <value> [and <target> to <value>]…" and
// "<target> by <value>" (a relative change: no absolute value).
func valueChanges(msg string, rest []token) ([]state.RequestedChange, bool) {
	var out []state.RequestedChange
	from := 0
	for k := 0; k < len(rest)-1; k++ {
		m := rest[k].w
		if m != "to" && m != "at" && m != "=" && m != "->" && m != "by" {
			continue
		}
		v, unit, ok := state.ParseQuantity(msg[rest[k+1].start:])
		if !ok || !startsNumber(rest[k+1].w) || clockLike(msg, rest[k+1]) {
			continue
		}
		used := 1
		if k+2 < len(rest) && state.KnownUnit(rest[k+2].w) && unit != "" && !strings.ContainsFunc(rest[k+1].w, unicode.IsLetter) {
			used = 2
		}
		target := rest[from:k]
		// "from 92 A to 105 A": the old value is not part of the target.
		for f := len(target) - 1; f >= 0; f-- {
			if target[f].w == "from" && f+1 < len(target) && startsNumber(target[f+1].w) {
				target = target[:f]
				break
			}
		}
		target = trimJoiners(target)
		if presentation(target) {
			return nil, false
		}
		rc := state.RequestedChange{Target: span(msg, target)}
		if m != "by" {
			rc.Value, rc.Unit = &v, unit
		}
		out = append(out, rc)
		from = k + 1 + used
		k = from - 1
	}
	return out, len(out) > 0
}

// valueFirst reads "<value> to|on|into|for <target>" ("write 105 A to Q1").
func valueFirst(msg string, rest []token) (state.RequestedChange, bool) {
	if len(rest) < 3 || !startsNumber(rest[0].w) || clockLike(msg, rest[0]) {
		return state.RequestedChange{}, false
	}
	v, unit, ok := state.ParseQuantity(msg[rest[0].start:])
	if !ok {
		return state.RequestedChange{}, false
	}
	k := 1
	if unit != "" && !strings.ContainsFunc(rest[0].w, unicode.IsLetter) {
		k = 2
	}
	if k >= len(rest)-1 {
		return state.RequestedChange{}, false
	}
	switch rest[k].w {
	case "to", "on", "into", "for", "in":
	default:
		return state.RequestedChange{}, false
	}
	target := trimJoiners(rest[k+1:])
	if len(target) == 0 || presentation(target) {
		return state.RequestedChange{}, false
	}
	return state.RequestedChange{Target: span(msg, target), Value: &v, Unit: unit}, true
}

func startsNumber(w string) bool {
	w = strings.TrimLeft(w, "+-.")
	return w != "" && w[0] >= '0' && w[0] <= '9'
}

// clockLike: "at 10:30" is a time, not a value.
func clockLike(msg string, t token) bool {
	return strings.Contains(msg[t.start:t.end], ":")
}

// trimJoiners drops joining words around a target ("and", "also", a
// trailing "up" of "ramp Q1 up by 5 A").
func trimJoiners(ts []token) []token {
	for len(ts) > 0 && (ts[0].w == "and" || ts[0].w == "also" || ts[0].w == "then" || ts[0].w == "&") {
		ts = ts[1:]
	}
	for len(ts) > 0 && (ts[len(ts)-1].w == "and" || ts[len(ts)-1].w == "please" || ts[len(ts)-1].w == "from" ||
		ts[len(ts)-1].w == "up" || ts[len(ts)-1].w == "down") {
		ts = ts[:len(ts)-1]
	}
	return ts
}

func presentation(ts []token) bool {
	for _, t := range ts {
		if presentationNouns[t.w] {
			return true
		}
	}
	return false
}

// span is the original text of a run of tokens.
func span(msg string, ts []token) string {
	if len(ts) == 0 {
		return ""
	}
	return strings.TrimSpace(msg[ts[0].start:ts[len(ts)-1].end])
}

// messageIntent is the offline intent of the turn's latest user message. A
// short follow-up without a verb that states a value ("and Q2 to 98 A")
// continues the previous message's change; only the user's own messages
// count, never the task a model wrote.
func messageIntent(s state.State) intentFinding {
	msg := latestUserMessage(s)
	f := offlineIntent(msg)
	if f.intent.IsChange() || f.firm || !isFollowUp(msg) || !previousWasChange(s) {
		return f
	}
	var changes []state.RequestedChange
	for _, c := range scan(msg) {
		if _, _, q, verbless := clauseIntent(msg, c); q != notQuestion || !verbless {
			return f // "verify that Q1 was set to 105 A" is no continuation
		}
		if cs, ok := valueChanges(msg, c.toks); ok {
			changes = append(changes, cs...)
		}
	}
	if len(changes) == 0 {
		return f
	}
	return intentFinding{intent: state.Intent{Kind: state.IntentChange, Changes: changes}, reason: reasonContinuation}
}

// previousWasChange reports whether the user's message before this turn
// asked for a change.
func previousWasChange(s state.State) bool {
	h := s.History()
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == state.RoleUser {
			return offlineIntent(h[i].Content).intent.IsChange()
		}
	}
	return false
}

func latestUserMessage(s state.State) string {
	if msg := strings.TrimSpace(s.Turn.Input); msg != "" {
		return msg
	}
	for i := len(s.Messages) - 1; i >= 0; i-- {
		if s.Messages[i].Role == state.RoleUser {
			return strings.TrimSpace(s.Messages[i].Content)
		}
	}
	return ""
}

// decideIntent combines a model's intent with the offline rules: without a
// model's intent the rules decide; a model's change is overruled when the
// message says explicitly that nothing is to change (firm); otherwise the
// model's reading stands (it understands phrasings the rules do not, and
// reading a change as a read is the safe mistake).
func decideIntent(model *state.Intent, offline intentFinding) (state.Intent, bool) {
	if model == nil {
		return offline.intent, false
	}
	if model.IsChange() && offline.firm {
		return offline.intent, true
	}
	return *model, false
}
