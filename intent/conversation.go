package intent

import (
	"regexp"
	"slices"
	"strings"
)

// The intent of a message in a conversation: the user's earlier messages
// may name what a short one refers to ("set it to 105 A"), continue
// ("and Q2 to 98 A", "same for Q2"), or be the change an answer to the
// assistant's question completes ("Q1", "105 A"). Only the user's words
// count; the assistant's only by the kind of its last message.

// FromMessages is the intent of the latest user message in a conversation;
// earlier holds the user's earlier messages, oldest first (only the user's
// own words count, never a model's task or a capability's result). A
// short follow-up without a verb that states a value ("and Q2 to 98 A")
// continues the previous message's change, and one asking it again on
// other devices ("same for Q2", "Q2 too") is that change on them; a
// change whose target names nothing ("set it to 105 A") refers to the
// names of the nearest message that has some (Refers).
func FromMessages(latest string, earlier []string) Finding {
	f := FromMessage(latest)
	if !f.Intent.IsChange() && f.Reason != ReasonQuestion && f.Reason != ReasonNoChange {
		return f
	}
	if !f.Intent.IsChange() {
		f = continuation(latest, earlier, f)
	}
	if !f.Intent.IsChange() && (f.Reason == ReasonNoChange || f.Reason == ReasonQuestion && !strings.Contains(latest, "?")) {
		f = sameAgain(latest, earlier, f) // "do the same for Q2" starts like a question
	}
	if !f.Intent.IsChange() && f.Intent.Note == "" && len(earlier) > 0 {
		f = repeatNoted(latest, earlier, f)
	}
	if f.Intent.IsChange() {
		for k, c := range f.Intent.Changes {
			if len(statedIdentifiers(c.Target)) > 0 {
				continue
			}
			refers, apart := referent(c.Target, latest, earlier)
			if apart != "" {
				// "Set the quadrupole current to 105 A, it's the one next to
				// Q2": the only device named is set apart from the change.
				held, _ := readWithNote(ReasonByOtherDevice, "Your change names no device, and the one your message names is set apart from it (\""+apart+"\"), "+
					"so nothing will be changed: which device is meant would be a guess. Name the device to change, for example \"set Q1 to 105 A\".")
				return held
			}
			f.Intent.Changes[k].Refers = refers
			tw := strings.Fields(strings.ToLower(c.Target))
			names := distinctNames(refers)
			picks := slices.ContainsFunc(tw, func(w string) bool { return contrastWords[w] || selectorWords[w] })
			bare := slices.DeleteFunc(slices.Clone(tw), func(w string) bool { return w == "one" || w == "the" })
			// "Set it to 105 A" with nothing before, "it" or "that one"
			// after "Q1 and Q2", "the other one", "the first one", "the
			// latter": which is meant would be a model's guess.
			// A message's first change that names nothing at all ("set to
			// 105", "make A 0", its unit read where its target stood, "set
			// the to 105") is held whatever came before: it is no "it". A
			// later one goes on from the change before it ("…, then to
			// 140 A").
			if len(bare) == 0 && (k == 0 || refers == "") || refers == "" && pronouns[strings.Join(tw, " ")] || picks ||
				len(bare) == 1 && singularPronouns[bare[0]] && len(names) > 1 || len(names) > 1 && !namesSeveral(tw) {
				note := "Your message does not say what \"" + c.Target + "\" is"
				if c.Target == "" {
					note = "Your message does not say what to change"
				}
				if len(names) > 1 && !picks {
					note += " (" + strings.Join(names, " or ") + ")"
				}
				in := Intent{Kind: KindRead, Note: note + ", so nothing will be changed. Name what to change, for example \"set Q1 to 105 A\"."}
				return Finding{Intent: in, Reason: ReasonUnclear}
			}
		}
	}
	return f
}

// pronouns are targets that name nothing by themselves; singularPronouns
// name one thing, so words naming several leave it open; contrastWords
// name what the words before do not ("the other one", "den anderen").
var (
	pronouns         = wordSet(`it that this them those these ihn es sie ihm das dies diesen le la les lui cela ça`)
	singularPronouns = wordSet(`it that this ihn es ihm das dies diesen le la lui cela ça`)
	contrastWords    = wordSet(`other others another else anderen andere anderer anderes autre autres l'autre`)
	// severalWords name more than one thing ("both", "all of them").
	severalWords = wordSet(`both all them each these those every beide beiden alle allen sie diese tous toutes les eux ces chacun chacune`)
	// selectorWords pick one of the things named before by its place or
	// its value ("the first one", "the latter", "the lower one", "its
	// neighbour", "den ersten", "le dernier").
	selectorWords = wordSet(`first second third fourth last latter former previous next lower higher upper bigger smaller larger
		highest lowest neighbour neighbor neighbouring neighboring adjacent nearest
		ersten erste zweiten zweite dritten letzten letzte letzteren ersteren vorigen nächsten nachbarn benachbarten oberen unteren
		höheren niedrigeren premier première deuxième second seconde dernier dernière précédent suivant voisin voisine`)
)

// namesSeveral reports whether a target's words name more than one thing:
// a word of severalWords or a plural ("the magnets"); "the magnet" after
// "Q1 and Q2" does not say which.
func namesSeveral(words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool {
		return severalWords[w] || len(w) > 3 && (strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x"))
	})
}

// distinctNames are the different numbered names in text ("Q1", "Q2"),
// in order.
func distinctNames(text string) []string {
	var out []string
	for _, id := range statedIdentifiers(text) {
		if n := id.String(); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// continuation reads a verbless follow-up ("and Q2 to 98 A") of a change.
func continuation(latest string, earlier []string, f Finding) Finding {
	if len(earlier) == 0 || !FromMessage(earlier[len(earlier)-1]).Intent.IsChange() || len(strings.Fields(latest)) > 12 {
		return f
	}
	masked, _ := maskReported(unmark(latest))
	var changes []RequestedChange
	for _, c := range scan(masked) { // scanned again below only when changes are found
		if r := readClause(masked, c); r.question != notQuestion || !r.verbless {
			return f // "verify that Q1 was set to 105 A" is no continuation
		}
		toks := c.toks
		for len(toks) > 1 && fillers[toks[0].w] {
			toks = toks[1:] // "Now Q2 to 98 A": "now" leads, it is no state of Q2
		}
		if cs, ok := valueChanges(masked, "", toks); ok {
			changes = append(changes, cs...)
		}
	}
	if len(changes) == 0 {
		return f
	}
	if slices.ContainsFunc(changes, func(c RequestedChange) bool { return c.Target == "" }) {
		// "to 0", "à 98 A": a value for nothing named, which a correction
		// of the change before and a typo would both give.
		held, _ := readWithNote(ReasonUnclear, "Your message gives a value without naming what it is for (\""+shorten(strings.TrimSpace(latest))+
			"\"), so nothing will be changed: name the device, for example \"set Q1 to 98 A\".")
		return held
	}
	return followUpChange(latest, masked, changes, ReasonContinuation)
}

// followUpChange is a follow-up's changes as a finding, unless its own
// words hold them back as a message's would ("and Q2 to 98 A tomorrow",
// "… No.", "Q2 too lol").
func followUpChange(latest, masked string, changes []RequestedChange, reason string) Finding {
	norm := strings.ReplaceAll(strings.ToLower(masked), "’", "'")
	clauses := scan(masked)
	if held, ok := heldBack(latest, masked, norm, clauses, changes, 0); ok {
		return held
	}
	if isLater(masked, norm, clauses, 0) {
		return laterFinding
	}
	return Finding{Intent: Intent{Kind: KindChange, Changes: changes}, Reason: reason}
}

// sameFor and tooAfter ask for the previous message's change on other
// devices: "same for Q2", "do the same for Q2 and Q3", "dasselbe für Q2",
// "pareil pour Q2"; "Q2 too", "and Q2 as well", "Q2 auch", "Q2 aussi".
// The device is the group "t".
var (
	sameFor = regexp.MustCompile(`(?i)^(?:(?:ok|okay|and|now|then|please|pls|und|jetzt|bitte|dann|et|maintenant|puis)[\s,]+)*` +
		`(?:(?:now )?do (?:the )?same(?: thing)?|(?:the )?same(?: thing)?|ditto|idem|likewise|` +
		`(?:mach )?(?:dasselbe|das gleiche|das selbe|dito|genauso|ebenso)|(?:fais |faites )?(?:pareil|de même|la même chose))` +
		`\s+(?:for|with|on|to|für|mit|bei|pour|avec|sur)\s+(?P<t>[^?]+?)[\s,]*(?:please|pls|too|as well|bitte|auch|svp|stp|aussi|s['’]il (?:te|vous) plaît)?[\s.!]*$`)
	tooAfter = regexp.MustCompile(`(?i)^(?:(?:ok|okay|and|now|then|please|also|und|jetzt|bitte|dann|et|maintenant|puis)[\s,]+)*` +
		`(?P<t>[^?,;]+?)[\s,]+(?:too|as well|also|auch|ebenfalls|ebenso|aussi|également|pareil)(?:[\s,]+(?:please|pls|bitte|svp|stp))?[\s.!]*$`)
)

// alsoBefore: a follow-up of devices alone after "also" or "and" ("Also
// Q2", "and Q2 and Q3", "Auch Q2", "Et Q2 aussi" is tooAfter's).
var alsoBefore = regexp.MustCompile(`(?i)^(?:(?:ok|okay|now|then|please|jetzt|bitte|dann|maintenant|puis)[\s,]+)*` +
	`(?:and also|also|and|und auch|auch|und|et aussi|aussi|et)\s+(?P<t>[^?,;]+?)(?:[\s,]+(?:please|pls|bitte|svp|stp))?[\s.!]*$`)

// subjects are who does something ("we … Q2 too"): the words are a
// statement, not devices.
var subjects = wordSet(`i we you he she they someone somebody ich wir du er sie man je nous tu il ils elle elles on`)

// sameAgain reads a follow-up asking for the previous message's change on
// other devices (sameFor, tooAfter): the user's own change, its value, its
// amount or its state, on the devices the follow-up names. Only after a
// message with one change, and only for devices named by a number ("Q2",
// "cavity 2"); after several changes which one is meant would be a guess.
func sameAgain(latest string, earlier []string, f Finding) Finding {
	if len(earlier) == 0 || len(strings.Fields(latest)) > 10 {
		return f
	}
	masked, _ := maskReported(unmark(latest))
	trimmed := strings.TrimSpace(masked)
	m := sameFor.FindStringSubmatchIndex(trimmed)
	if m == nil {
		m = tooAfter.FindStringSubmatchIndex(trimmed)
	}
	codesOnly := false
	if m == nil {
		m, codesOnly = alsoBefore.FindStringSubmatchIndex(trimmed), true
	}
	if m == nil {
		return f
	}
	text := strings.TrimSpace(trimmed[m[2]:m[3]])
	text = trimFillers(text, scan(text)) // "Q2 bitte auch": Q2
	if codesOnly && slices.ContainsFunc(scan(text), func(c clause) bool {
		return slices.ContainsFunc(c.toks, func(t token) bool { return !listWord(t.w) })
	}) {
		return f // "and the plot": devices alone only
	}
	if first, _, _ := strings.Cut(strings.ToLower(text), " "); len(statedIdentifiers(text)) == 0 || questionWords[first] {
		return f // "what about Q2 too"
	}
	if strings.ContainsAny(text, ">|") {
		return f
	}
	for _, c := range scan(text) {
		for k, t := range c.toks {
			if afterNegations[t.w] || negationWords[t.w] || questionWords[t.w] || readVerbs[t.w] || verbOf(t.w) != "" || changeWords[t.w] ||
				copulas[t.w] || stateWords[t.w] || subjects[t.w] || len(t.w) > 4 && strings.HasSuffix(t.w, "ed") ||
				startsNumber(t.w) && numberToken(text, t) && k+1 < len(c.toks) && KnownUnit(c.toks[k+1].w) {
				// "not Q2 too", "show Q2 too", "we changed Q2 too", "Q2 is
				// high too", "same for Q2 at 98 A": no device alone.
				return f
			}
		}
	}
	before := FromMessages(earlier[len(earlier)-1], earlier[:len(earlier)-1])
	if !before.Intent.IsChange() {
		return f // "What is Q1?" then "Q2 too": a read
	}
	if len(before.Intent.Changes) != 1 {
		in := Intent{Kind: KindRead, Note: "Your message asks for the change before it again (\"" + shorten(strings.TrimSpace(latest)) +
			"\"), which asked for several, so nothing will be changed: which one is meant would be a guess. " +
			"Ask for the change itself, for example \"set Q2 to 105 A\"."}
		return Finding{Intent: in, Reason: ReasonUnclear}
	}
	c := before.Intent.Changes[0]
	c.Target, c.Refers = text, ""
	return followUpChange(latest, masked, []RequestedChange{c}, ReasonContinuation)
}

// repeatAsked: a short follow-up asking for the change before it once more
// ("again", "do it again", "5 more", "another 5", "nochmal", "encore") or
// naming a device next ("now Q2", "next Q2", "then Q2").
var (
	repeatAsked = regexp.MustCompile(`^(?:(?:and|ok|okay|now|please|pls|bitte|und|jetzt|et|maintenant)[\s,]+)*(?:(?:do|make|repeat) (?:it|that|this)[\s,]+|same[\s,]+)?` +
		`(?:again|once more|one more time|repeat(?: it| that)?|another(?: one| time| step| \d+(?:[.,]\d+)?(?:\s*[\pL%°]+)?)?|` +
		`\d+(?:[.,]\d+)?(?:\s*[\pL%°]+)?\s+more|noch ?(?:mal|einmal)|nochmal|wiederhol\w*|(?:noch )?weitere \d+(?:[.,]\d+)?(?:\s*[\pL%°]+)?|` +
		`encore(?: une fois| \d+(?:[.,]\d+)?(?:\s*[\pL%°]+)?)?|de nouveau|refais(?:-le)?|recommence)(?:\s+(?:please|pls|bitte|stp|svp))?[\s.!]*$`)
	// correctionAsked: a follow-up that corrects the change before it
	// without stating a change ("sorry, I meant Q2", "oops, wrong one",
	// "ich meinte Q2", "je voulais dire Q2").
	correctionAsked = regexp.MustCompile(`\b(?:i meant|i mean|meant to say|wrong one|wrong device|wrong value|ich meinte|ich meine|falsche[rns]?|` +
		`je voulais dire|je veux dire|mauvais|mauvaise)\b|^(?:sorry|oops|whoops|pardon|my bad|entschuldigung|désolée?)[\s,.!:;—-]+` +
		`(?:not\s+)?(?:the\s+|die\s+|den\s+|le\s+|la\s+)?[\pL:_-]*\d[\pL\pN:_-]*[\s.!]*$`)
	deviceNext = regexp.MustCompile(`^(?:(?:and|ok|okay|und|et)[\s,]+)?(?:now|next|then|jetzt|dann|nun|maintenant|puis|ensuite)[\s,]+(?:the\s+|die\s+|den\s+|le\s+|la\s+)?([\pL\pN:_-]+)(?:\s+(?:please|pls|bitte|stp|svp))?[\s.!]*$`)
)

// repeatNoted tells the operator that a follow-up asking for the change
// before it once more, naming a device next, or correcting it ("sorry, I
// meant Q2") changes nothing: a change is made only as the user's words
// state it, in full.
func repeatNoted(latest string, earlier []string, f Finding) Finding {
	text := strings.ToLower(strings.TrimSpace(latest))
	repeat := repeatAsked.MatchString(text)
	next := deviceNext.FindStringSubmatch(text)
	corrects := f.Reason != ReasonQuestion && !strings.Contains(text, "?") && correctionAsked.MatchString(text)
	if !repeat && !corrects && (next == nil || len(statedIdentifiers(next[1])) == 0) {
		return f
	}
	if before := FromMessages(earlier[len(earlier)-1], earlier[:len(earlier)-1]); !before.Intent.IsChange() {
		return f // "Show Q1" then "now Q2": a read
	}
	switch {
	case corrects:
		f.Intent.Note = "Your message corrects the change before it (\"" + shorten(strings.TrimSpace(latest)) + "\") but states no change in full, so nothing will be changed. " +
			"Ask for the change you want in full, for example \"set Q2 to 105 A\"."
	case repeat:
		f.Intent.Note = "Your message asks for the change before it once more (\"" + shorten(strings.TrimSpace(latest)) + "\"), so nothing will be changed: " +
			"a change is made only as your words state it. Ask for it in full, for example \"raise Q1 by 5 A\"."
	default:
		f.Intent.Note = "Your message names a device after a change (\"" + shorten(strings.TrimSpace(latest)) + "\") but no change for it, so nothing will be changed. " +
			"Ask for it in full, for example \"set Q2 to 105 A\", or \"same for Q2\"."
	}
	return f
}

// referent is the user's nearest words naming something for a target that
// names nothing: the rest of the latest message, else the latest earlier
// message with a numbered name, else the latest earlier message (their
// reported parts left out); "" when there is none.
func referent(target, latest string, earlier []string) (refers, apart string) {
	masked, _ := maskReported(latest)
	if rest := strings.Replace(masked, target, "", 1); len(statedIdentifiers(rest)) > 0 {
		kept, apart := namedApart(rest)
		if len(statedIdentifiers(kept)) == 0 {
			return "", apart
		}
		return strings.Join(strings.Fields(kept), " "), ""
	}
	for i := len(earlier) - 1; i >= 0; i-- {
		m, _ := maskReported(earlier[i])
		if len(statedIdentifiers(m)) > 0 {
			return strings.Join(strings.Fields(m), " "), ""
		}
	}
	if len(earlier) > 0 {
		m, _ := maskReported(earlier[len(earlier)-1])
		return strings.Join(strings.Fields(m), " "), ""
	}
	return "", ""
}

// namedApart blanks the device codes of text that a set-apart word comes
// shortly before ("like Q2", "next to Q2", "same as Q2", "except Q2"): a
// device compared with or set apart from a change is not what a target
// naming none refers to. It returns the text left and the first words
// blanked.
func namedApart(text string) (kept, apart string) {
	b := []byte(text)
	for _, c := range scan(text) {
		for k, t := range c.toks {
			if !deviceCode(t.w) || !slices.ContainsFunc(c.toks[max(0, k-3):k], func(p token) bool { return setApart[p.w] }) {
				continue
			}
			if apart == "" {
				apart = span(text, c.toks[max(0, k-3):k+1])
			}
			for i := t.start; i < t.end; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b), apart
}

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
	core := trimFillers(text, clauses) // the answer without "ok", "please"
	prevText := earlier[len(earlier)-1]
	prev := FromMessages(prevText, earlier[:len(earlier)-1])
	var changes []RequestedChange
	value, unitless := answerValue(text, clauses)
	switch {
	case prev.Intent.IsChange() && len(prev.Intent.Changes) == 1 && value == "" && len(statedIdentifiers(core)) > 0:
		c := prev.Intent.Changes[0]
		c.Target, c.Refers = core, ""
		changes = []RequestedChange{c}
	case prev.Reason == ReasonUnclear && value != "" && len(statedIdentifiers(core)) == 0:
		if m := pointGroup.FindString(value); m != "" {
			// "1.050 A" after "Setze Q1": 1050 or 1.05? The answer has no
			// word of its language to tell.
			return Finding{Intent: Intent{Kind: KindRead, Note: noteGrouped(strings.TrimSpace(m))}, Reason: ReasonOpenValue}
		}
		said := core // with what comes before the number: "~105 A" stays a bound
		marker, _, _ := strings.Cut(strings.ToLower(value), " ")
		if !toMarkers[marker] && !byMarkers[marker] {
			if dirOf(prevText) != 0 {
				// "Raise Q1" then "5 A": to 5 A or by 5 A?
				in := Intent{Kind: KindRead, Note: "Your answer gives a value (\"" + shorten(core) + "\") without saying whether it is the new value or the amount of the change, " +
					"so nothing will be changed: say \"to " + value + "\" or \"by " + value + "\"."}
				return Finding{Intent: in, Reason: ReasonOpenValue}
			}
			said = "to " + core
		}
		g := FromMessage(strings.TrimRight(strings.TrimSpace(prevText), ".!") + " " + said)
		if !g.Intent.IsChange() || len(g.Intent.Changes) != 1 || strings.TrimSpace(g.Intent.Changes[0].Target) == "" {
			return f // no change, several, or one that names nothing ("Sett!" then "0 A")
		}
		changes = g.Intent.Changes
	case prev.Reason == ReasonUnclear && unitless:
		// "to 0", "105" after "Set Q1": a number alone may be an option's, and
		// which unit would be a guess.
		in := Intent{Kind: KindRead, Note: "Your answer gives a number without a unit (\"" + shorten(strings.TrimSpace(answer)) + "\"), so nothing will be changed: " +
			"give the value with its unit, for example \"105 A\"."}
		return Finding{Intent: in, Reason: ReasonOpenValue}
	default:
		return f
	}
	return followUpChange(answer, masked, changes, ReasonAnswer)
}

// pointGroup is a point before three digits ("1.050"): a thousands point
// in German and French, a decimal point in English.
var pointGroup = regexp.MustCompile(`\d\.\d{3}(?:$|[^\d])`)

// trimFillers is the words of a follow-up or an answer without the fillers
// around them ("ok, Q1, please" is "Q1").
func trimFillers(text string, clauses []clause) string {
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
// unit. "" otherwise, and unitless when the answer is one number without a
// unit ("105", "to 0").
func answerValue(text string, clauses []clause) (value string, unitless bool) {
	var ts []token
	for _, c := range clauses {
		if !slices.ContainsFunc(c.toks, func(t token) bool { return !fillers[t.w] }) {
			continue // "ok, 105 A"
		}
		if ts != nil {
			return "", false
		}
		ts = c.toks
	}
	prevEnd := 0
	for len(ts) > 0 && fillers[ts[0].w] {
		prevEnd, ts = ts[0].end, ts[1:]
	}
	for len(ts) > 0 && fillers[ts[len(ts)-1].w] {
		ts = ts[:len(ts)-1] // "105 A please"
	}
	if len(ts) == 0 {
		return "", false
	}
	start := ts[0].start
	if toMarkers[ts[0].w] || byMarkers[ts[0].w] {
		prevEnd, ts = ts[0].end, ts[1:]
	}
	if len(ts) == 0 || !startsNumber(ts[0].w) || clockLike(text, ts[0]) || !numberToken(text, ts[0]) ||
		strings.Trim(text[prevEnd:ts[0].start], " \t,:") != "" {
		return "", false // "~105 A", "≈ 105 A": a sign before the number says more than the number
	}
	_, unit, ok := ParseQuantity(text[ts[0].start:])
	if ok && unit == "" && len(ts) == 1 && !unknownUnitAfter(text, ts[0].end, "") {
		return "", true
	}
	if !ok || unit == "" || timeWords[strings.ToLower(unit)] || valueWidth(ts, 0, unit) != len(ts) {
		return "", false
	}
	return text[start:ts[len(ts)-1].end], false
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
