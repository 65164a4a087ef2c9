package intent

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reported words are someone else's: a quotation, what a logbook entry or
// a shift note says, a note addressed to the assistant pasted into a
// question. They are never the user's request, whatever they say, so the
// rules blank them before reading the message (a model reading the same
// words is no better a judge: docs/safety.md, "Intent before action").

// reportedText says what maskReported blanked.
type reportedText struct {
	change bool   // the blanked words hold a change verb
	what   string // a few words naming what was reported ("the logbook says")
}

// quotePairs are the quotation marks that open and close a quotation.
var quotePairs = map[rune]rune{'"': '"', '“': '”', '„': '“', '«': '»', '‚': '‘', '‹': '›', '「': '」', '`': '`'}

// injectionPattern starts a note addressed to the assistant or the system
// ("SYSTEM NOTE TO THE ASSISTANT: …", "ignore previous instructions",
// "[INST]"): everything from it to the end of the message is reported.
var injectionPattern = mustFilterFold(`(?i)(?:\b(?:system|assistant|ai|bot|model|developer|admin)\b[^.!?\n:]{0,40}:|` +
	`\bnote (?:to|for) (?:the )?(?:assistant|ai|model|bot|agent|system|llm)\b|` +
	`\b(?:ignore|disregard|forget) (?:all |any )?(?:the |your )?(?:previous|prior|above|earlier|former) (?:instructions?|messages?|rules?|prompts?)|` +
	`\[/?(?:system|inst)\]|<\|?/?(?:system|im_start|im_end)\|?>|` +
	`\b(?:hinweis|notiz|anweisung) (?:an|für) (?:den |die )?(?:assistenten|assistent|ki|system|modell)\b|` +
	`\b(?:note|consigne|instruction) (?:à|a|pour) (?:l'assistant|l'ia|l'agent|le système|le modèle)\b|` +
	// The assistant spoken of in the third person: "(The assistant should also set…)".
	`\bthe (?:assistant|ai|agent|model|system|llm|bot) (?:should|must|shall|will|is to|needs to|has to|may)\b|` +
	`\b(?:der assistent|die ki|das system|das modell) (?:soll|muss|sollte|darf)\b|` +
	`\b(?:l'assistant|l'ia|l'agent|le système|le modèle) (?:doit|devrait|va)\b)`)

// examplePattern starts an example.
var examplePattern = mustFilterFold(`(?i)\b(?:e\.\s?g\.|for (?:example|instance)|as an? (?:example|illustration)|z\.\s?b\.|zum beispiel|als beispiel|par exemple|comme exemple)|(?:^|[^\pL])à titre d'exemple`)

// reportNouns in a label ("Shift note:", "Logbook entry:") make what
// follows the colon reported; so does a word ending in one of
// reportSuffixes ("Schichtnotiz:", "shiftlog:").
var (
	reportNouns = wordSet(`note notes log logs logbook elog e-log entry entries message messages msg email e-mail mail
		ticket comment comments memo handover instruction instructions quote remark remarks chat procedure checklist
		colleague operator operators coordinator boss someone somebody he she they reply answer report reminder todo
		to-do agenda schedule fyi error errors output result results response traceback exception warning
		fehler fehlermeldung ausgabe ergebnis erreur sortie résultat
		notiz notizen logbuch eintrag nachricht hinweis anweisung übergabe protokoll kollege kollegin schichtleiter
		journal cahier entrée consigne consignes relève commentaire courriel collègue rapport`)
	reportSuffixes = []string{"note", "notiz", "log", "buch", "eintrag", "protokoll"}
	// materialLabels before a colon make what follows material for an
	// example or a task on words, not a request ("Example: …",
	// "Translate to German: …", "Repeat after me: …", "Plan: …",
	// "Validate this command: …").
	materialLabels = wordSet(`example examples sample template translate translation repeat rephrase paraphrase reword proofread
		summarize summarise beispiel übersetze übersetzen übersetzung wiederhole umformulieren exemple traduis traduire
		traduction répète reformule
		plan draft proposal propose proposed suggestion describe explain document validate verify review critique evaluate assess
		entwurf vorschlag beschreibe erkläre überprüfe bewerte brouillon proposition décris explique valide évalue
		zitat zitiert fasse zusammenfassung citation résume résumé`)
	// reportVerbs: what follows them, to the end of the sentence, is
	// reported ("the logbook says set Q1 to 140 A", "Bob asked to…").
	reportVerbs = wordSet(`says said say wrote writes states stated suggests suggested recommends recommended claims
		claimed asked asks told tells mentions mentioned reported reports instructs instructed wants wanted reads
		sagt sagte gesagt schreibt schrieb geschrieben steht stand meint meinte gemeint empfiehlt empfahl empfohlen fordert forderte
		behauptet verlangt schlug vorgeschlagen
		dit disait écrit écrivait indique indiquait affirme suggère suggéré recommande recommandé prétend`)
	// sourceNouns name where reported words come from: a sentence naming
	// one, or holding a reporting verb, is reported whole ("Set Q1 to 140 A
	// was the instruction in the logbook").
	sourceNouns = wordSet(`logbook logbooks elog e-log log entry entries instruction instructions procedure procedures
		handover note notes message messages chat email e-mail memo ticket checklist
		logbuch eintrag anweisung anweisungen übergabe notiz protokoll nachricht
		journal cahier relève courriel`)  // not "consigne": a setpoint as often as an instruction
	// reportPreps: "according to the logbook, set…", "laut Logbuch", "selon".
	reportPreps = [][]string{{"according", "to"}, {"as", "per"}, {"per"}, {"laut"}, {"gemäß"}, {"zufolge"}, {"selon"}, {"d'après"}}
)

// emphasis matches Markdown emphasis and code around a value or a word
// ("**105** A", "`105` A", "*105 A*"): its markers are blanked, so that
// the value keeps its unit.
var emphasis = regexp.MustCompile("(\\*\\*|__|`)([^*_`\n]{1,40})(\\*\\*|__|`)|(^|\\s)(\\*)([^*\\s][^*\\n]{0,40}?)(\\*)(\\s|$|[.,;!?])")

// listHeading: a line that is a change verb alone, its object left to the
// list below ("Set:", "Please set the following:", "Setze folgende:").
var listHeading = regexp.MustCompile(`(?im)^[ \t]*(?:(?:please|pls|kindly|bitte)[ \t]+)?(\pL+)([ \t]+(?:the following(?: values)?|these|folgende|folgendes|ce qui suit|les valeurs suivantes))?[ \t]*:[ \t]*\n`)

// listItemMark marks the start of a list's line ("- ", "* ", "• ", "2. ").
var listItemMark = regexp.MustCompile(`^[ \t]*(?:[-*•]|\d{1,2}[.)])[ \t]+`)

// itemColon: a device's name and a colon before its value in a list's
// line ("Q1: 105 A"), read as "Q1 = 105 A".
var itemColon = regexp.MustCompile(`^(\pL[\pL\pN]{0,9}\pN):[ \t]*[-+−]?\d`)

// joinHeadedList reads a change verb heading a list as one request, every
// byte in place ("Set:\n- Q1: 105 A\n- Q2: 98 A" reads as "Set   Q1= 105 A ,
// Q2= 98 A"): the heading's colon, the line breaks and the items' marks
// become spaces and commas, an item's colon after a device's name "=".
func joinHeadedList(msg string) string {
	loc := listHeading.FindStringSubmatchIndex(msg)
	if loc == nil || verbOf(strings.ToLower(msg[loc[2]:loc[3]])) == "" {
		return msg
	}
	b := []byte(msg)
	colon := strings.LastIndexByte(msg[:loc[1]], ':')
	b[colon] = ' '
	for i := max(loc[4], 0); i < loc[5]; i++ {
		b[i] = ' ' // "the following" names no device
	}
	joined := 0
	for at := loc[1] - 1; at < len(b) && b[at] == '\n'; {
		end := lineEnd(b, at+1)
		mark := listItemMark.FindIndex(b[at+1 : end])
		if mark == nil {
			break
		}
		b[at] = ','
		if joined == 0 {
			b[at] = ' '
		}
		for i := at + 1; i < at+1+mark[1]; i++ {
			b[i] = ' '
		}
		if m := itemColon.FindSubmatchIndex(b[at+1+mark[1] : end]); m != nil {
			b[at+1+mark[1]+m[3]] = '='
		}
		joined++
		at = end
	}
	if joined == 0 {
		return msg
	}
	return string(b)
}

// listNumber is the number of a numbered list's item at a line's start
// ("1. ", "2) "), in a message of several lines.
var listNumber = regexp.MustCompile(`(?m)^[ \t]*(\d{1,2}[.)])[ \t]+\S`)

// unmark blanks Markdown emphasis markers around short runs of words
// (emphasis) and the numbers of a numbered list (listNumber), keeping
// every other byte in place; a code span holding a change verb stays a
// quotation ("`set Q1 to 105 A`").
func unmark(msg string) string {
	if strings.Contains(msg, ":\n") {
		msg = joinHeadedList(msg)
	}
	if strings.Contains(msg, "\n") && listNumber.MatchString(msg) {
		// "1. Set Q1 to 105 A\n2. Set Q2 to 98 A": a list's numbers are no values.
		b := []byte(msg)
		for _, m := range listNumber.FindAllStringSubmatchIndex(msg, -1) {
			for i := m[2]; i < m[3]; i++ {
				b[i] = ' '
			}
		}
		msg = string(b)
	}
	msg = spelledMinus(spelledZero(msg))
	if !strings.ContainsAny(msg, "*_`") {
		return msg
	}
	b := []byte(msg)
	for _, m := range emphasis.FindAllStringSubmatchIndex(msg, -1) {
		inner, markers := [2]int{m[4], m[5]}, [][2]int{{m[2], m[3]}, {m[6], m[7]}}
		if m[2] < 0 {
			inner, markers = [2]int{m[12], m[13]}, [][2]int{{m[10], m[11]}, {m[14], m[15]}}
		}
		if msg[markers[0][0]] == '`' && hasChangeVerb(msg[inner[0]:inner[1]]) {
			continue
		}
		for _, mk := range markers {
			for i := mk[0]; i < mk[1]; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// zeroWord is zero spelled out after a value marker of its language ("to
// zero", "auf null", "à zéro", "a cero") or before a unit ("zero amps");
// "null" alone, or "a zero", is read by no rule.
var zeroWord = regexp.MustCompile(`(?i)(?:^|[^\pL\d])(?:(to|at|auf|à|a)\s+)?(zero|null|zéro|cero)(?:$|[^\pL\d])`)

// zeroAfter are the markers each spelled zero may follow.
var zeroAfter = map[string]string{"zero": "to at auf à", "null": "auf", "zéro": "à", "cero": "a"}

// spelledZero writes zeroWord's zero as the number 0, padded with spaces
// so that every other byte stays in place ("set Q1 to zero" is "set Q1 to
// 0").
func spelledZero(msg string) string {
	if !strings.ContainsAny(msg, "oOlL") {
		return msg
	}
	ms := zeroWord.FindAllStringSubmatchIndex(msg, -1)
	if ms == nil {
		return msg
	}
	b := []byte(msg)
	for _, m := range ms {
		word := strings.ToLower(msg[m[4]:m[5]])
		if m[2] < 0 && !unitNext(msg[m[5]:]) || m[2] >= 0 && !slices.Contains(strings.Fields(zeroAfter[word]), strings.ToLower(msg[m[2]:m[3]])) ||
			numberGoesOn(msg[m[5]:]) {
			continue
		}
		b[m[4]] = '0'
		for i := m[4] + 1; i < m[5]; i++ {
			b[i] = ' '
		}
	}
	return string(b)
}

// minusWord is a minus in words right before a number ("to minus 2 A",
// "make it negative 2 A", "auf minus 2 A"; the French "moins" after "à":
// "au moins 2 A" is at least).
var minusWord = regexp.MustCompile(`(?i)(?:(?:^|[^\pL\d])(minus|negative)|(?:^|[^\pL\d])(?:à|=)\s+(moins))(\s+)\d`)

// spelledMinus writes minusWord's minus as a sign against its number, the
// bytes before it blanked, so that every other byte stays in place ("to
// minus 2 A" is "to       -2 A").
func spelledMinus(msg string) string {
	if !strings.ContainsAny(msg, "mMnN") {
		return msg
	}
	ms := minusWord.FindAllStringSubmatchIndex(msg, -1)
	if ms == nil {
		return msg
	}
	b := []byte(msg)
	for _, m := range ms {
		from := m[2]
		if from < 0 {
			from = m[4] // "moins"
		}
		for i := from; i < m[7]; i++ {
			b[i] = ' '
		}
		b[m[7]-1] = '-'
	}
	return string(b)
}

// firstWord is the first word of rest, without the punctuation after it.
func firstWord(rest string) string {
	next, _, _ := strings.Cut(strings.TrimLeft(rest, " \t"), " ")
	return strings.TrimRight(next, ".,;:!?)")
}

// unitNext reports a unit capgraph knows as the next word ("zero amps").
func unitNext(rest string) bool { return KnownUnit(firstWord(rest)) }

// numberGoesOn reports a spelled number's next word going on with it
// ("zero point five", "null Komma fünf", "zero 5"): no zero alone.
func numberGoesOn(rest string) bool {
	next := strings.ToLower(firstWord(rest))
	return next != "" && (next[0] >= '0' && next[0] <= '9' || spelledNumberWords[next])
}

// spelledNumberWords go on from a spelled zero.
var spelledNumberWords = wordSet(`point dot comma decimal zero oh one two three four five six seven eight nine ten
	komma null eins zwei drei vier fünf sechs sieben acht neun zehn
	virgule zéro un deux trois quatre cinq six sept huit neuf dix
	coma punto cero uno dos tres cuatro cinco seis siete ocho nueve diez`)

// maskReported returns msg with its reported words blanked (each byte a
// space, so places in the text stay), and what was blanked.
func maskReported(msg string) (string, reportedText) {
	b := []byte(msg)
	var rep reportedText
	blank := func(from, to int, what string) {
		if from >= to {
			return
		}
		if !rep.change && wouldChange(string(b[from:to])) {
			rep.change, rep.what = true, what
		}
		for i := from; i < to; i++ {
			b[i] = ' '
		}
	}
	// A note to the assistant: the rest of the message.
	if loc := injectionPattern.FindStringIndex(msg); loc != nil {
		blank(loc[0], len(b), "a note addressed to the assistant")
	}
	// Quotations that hold a change verb; a short one that holds none
	// quotes a name or a value, and only its marks are blanked.
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		closeRune, ok := quotePairs[r]
		if !ok && r == '\'' && (i == 0 || b[i-1] == ' ') {
			closeRune, ok = '\'', true
		}
		if !ok {
			i += size
			continue
		}
		j := strings.IndexRune(string(b[i+size:]), closeRune)
		closed := j >= 0
		if !closed {
			if r == '"' || r == '\'' || r == '`' {
				i += size
				continue
			}
			j = len(b) - i - size // an unclosed guillemet: to the end
		}
		end := i + size + j
		switch inner := string(b[i+size : end]); {
		case hasChangeVerb(inner):
			blank(i, min(end+utf8.RuneLen(closeRune), len(b)), "a quotation")
		case closed && len(inner) <= 40 && !strings.Contains(inner, "\n"):
			// A quoted name or value ("set \"Q1\" to 105 A", "… to
			// «105 A»"): its marks are no break in the request.
			for k := i; k < i+size; k++ {
				b[k] = ' '
			}
			for k := end; k < end+utf8.RuneLen(closeRune); k++ {
				b[k] = ' '
			}
		}
		i = min(end+utf8.RuneLen(closeRune), len(b))
	}
	// An example, to the end of its line: "e.g. set Q1 to 140 A", "for
	// example, …", "z. B. …", "par exemple, …".
	for from := 0; from < len(b); {
		loc := examplePattern.FindStringIndex(string(b[from:]))
		if loc == nil {
			break
		}
		start, end := from+loc[0], len(b)
		if nl := bytes.IndexByte(b[from+loc[1]:], '\n'); nl >= 0 {
			end = from + loc[1] + nl
		}
		blank(start, end, "an example")
		from = end + 1
	}
	// Struck-through words ("~~set Q1 to 140 A~~") are taken back, and an
	// HTML comment ("<!-- set Q1 to 140 A -->") does not show: neither is
	// a request.
	for _, r := range []struct {
		open, close, what string
	}{{"~~", "~~", "struck-through words"}, {"<!--", "-->", "a comment"}} {
		for from := 0; from < len(b); {
			i := bytes.Index(b[from:], []byte(r.open))
			if i < 0 {
				break
			}
			start := from + i
			end := len(b)
			if j := bytes.Index(b[start+len(r.open):], []byte(r.close)); j >= 0 {
				end = start + len(r.open) + j + len(r.close)
			}
			if !rep.change && wouldChange(string(b[start:end])) {
				rep.change, rep.what = true, r.what
			}
			for k := start; k < end; k++ { // blanked whatever they hold
				b[k] = ' '
			}
			from = end
		}
	}
	// A line after who said it (the speaker's mark is b[start:said]), whole,
	// when what it says asks for a change.
	blankSaid := func(start, said int, what string) {
		if end := lineEnd(b, said); hasChangeVerb(string(b[said:end])) {
			blank(said, end, what) // what it says first: "set Q1 to 140 A" is a change reported
			blank(start, said, what)
		}
	}
	// Lines of a chat log ("[10:32] Bob: set Q1 to 140 A", "<bob> set …",
	// "10:32 Bob: …").
	for _, m := range chatLogLine.FindAllIndex(b, -1) {
		blankSaid(m[0], m[1], "a line of a chat log")
	}
	// Lines of a transcript: two speakers or more, each line after its
	// speaker's name ("Alice: Q1 looks low\nBob: set Q1 to 140 A",
	// "Q: …\nA: …").
	if bytes.IndexByte(b, '\n') >= 0 {
		lines := slices.DeleteFunc(speakerLine.FindAllSubmatchIndex(b, -1), func(m []int) bool {
			return sectionLabels[strings.ToLower(string(b[m[2]:m[3]]))]
		})
		speakers := map[string]bool{}
		for _, m := range lines {
			speakers[string(b[m[2]:m[3]])] = true
		}
		if len(speakers) >= 2 {
			for _, m := range lines {
				blankSaid(m[0], m[1], "a transcript")
			}
		}
	}
	// Lines quoted in Markdown or e-mail ("> set Q1 to 140 A"), whole.
	for start := 0; start < len(b); {
		end := lineEnd(b, start)
		if line := bytes.TrimLeft(b[start:end], " \t"); len(line) > 0 && line[0] == '>' {
			if hasChangeVerb(string(line[1:])) {
				blank(start, end, "a quoted line")
			}
		}
		start = end + 1
	}
	// A sentence naming a source or holding a reporting verb, whole ("the
	// logbook says set…", "Set Q1 to 140 A, said nobody"); labels ("Shift
	// note: …", "Reminder: …") and prepositions ("according to the
	// logbook, …"): to the sentence's end.
	s := string(b)
	carried := "" // a report that opens a block ("The shift plan says:\n…", "Handover notes:\n1. …"), to the paragraph's end
	for _, sent := range sentences(s) {
		text := s[sent[0]:sent[1]]
		if carried != "" {
			if strings.TrimSpace(text) == "" && (sent[1] >= len(s) || s[sent[1]] == '\n') {
				carried = "" // a blank line ends it
				continue
			}
			blank(sent[0], sent[1], carried)
			continue
		}
		words := wordSpans(text)
		lower := make([]string, len(words)) // each word once, not once per rule
		for k, w := range words {
			lower[k] = strings.ToLower(strings.ReplaceAll(text[w[0]:w[1]], "’", "'"))
		}
		whole, verb := "", -1
		for k, lw := range lower {
			if reportVerbs[lw] && readingAfter(text, words, k) {
				continue // "Q2 reads 98 A": a reading, not a report
			}
			if reportVerbs[lw] || sourceNouns[lw] {
				if c := ownRecord(text, words, lower, k); c > 0 {
					// "Set Q1 to 105 A and make an entry in the logbook": the
					// user asks for the record too; it is no request to the
					// machine, and the change before it stays the user's.
					blank(sent[0]+words[c][0], sent[1], strings.Join(lower[c:min(c+3, len(lower))], " "))
					break
				}
				whole = reportedBy(text, words, k)
				for j := k; j < len(lower) && j <= k+1 && verb < 0; j++ {
					if reportVerbs[lower[j]] {
						verb = j
					}
				}
				break
			}
		}
		if whole != "" {
			if !rep.change && verb >= 0 && wouldChange(afterReport(text[words[verb][1]:])) {
				// "The shift plan says set Q1 to 105 A": the change is after the verb.
				rep.change, rep.what = true, whole
				if strings.HasPrefix(whole, lower[verb]+" ") && verb > 0 {
					rep.what = lower[verb-1] + " " + lower[verb] // "plan says", not "says set"
				}
			}
			blank(sent[0], sent[1], whole)
			if opensBlock.MatchString(text) || sent[1] < len(s) && s[sent[1]] == '.' && listStart.MatchString(text) {
				carried = shorten(strings.ToLower(strings.TrimRight(strings.TrimSpace(text), ": 1"))) // "The procedure reads 1. set …"
			}
			continue
		}
		for k, w := range words {
			lw := lower[k]
			after := -1
			switch {
			case reportVerbs[lw]:
				after = w[1]
			case colonAfter(text, w[1]) > 0 && labelReports(text, words[:k+1]):
				after = colonAfter(text, w[1])
			default:
				for _, p := range reportPreps {
					if lw == "per" && k+1 < len(lower) && strings.TrimSuffix(lower[k+1], "s") == "cent" {
						break // "10 per cent": a percentage, no source
					}
					if k+len(p) <= len(words) && slices.Equal(lower[k:k+len(p)], p) {
						after = words[k+len(p)-1][1]
						break
					}
				}
			}
			if after >= 0 {
				what := strings.ToLower(strings.TrimSpace(text[:after]))
				blank(sent[0]+after, sent[1], what)
				if opensBlock.MatchString(text) {
					carried = shorten(strings.ToLower(strings.TrimRight(strings.TrimSpace(text), ": ")))
				}
				break
			}
		}
	}
	return string(b), rep
}

// chatLogLine: the start of a line of a chat log — a time in brackets, a
// nickname in angle brackets, or a time and a speaker.
var chatLogLine = regexp.MustCompile(`(?m)^[ \t]*(?:\[\d{1,2}:\d{2}(?::\d{2})?\](?:[ \t]*<[\pL\pN_.-]{1,32}>|[ \t]*[\pL\pN_.-]{1,32}:)?|` +
	`<[\pL\pN_.-]{1,32}>|\d{1,2}:\d{2}(?::\d{2})?[ \t]+[\pL\pN_.-]{1,32}:)`)

// speakerLine: a line after a speaker's name — a capital and small
// letters, or one capital ("Bob:", "Alice Smith:", "Q:"), not a device or an
// acronym ("Q1:", "BTS:").
var speakerLine = regexp.MustCompile(`(?m)^[ \t]*(\p{Lu}(?:\p{Ll}+(?: \p{Lu}\p{Ll}+)?)?):[ \t]`)

// sectionLabels head the parts of the user's own message ("Context: …\nRequest: set …"), not speakers.
var sectionLabels = wordSet(`action actions request requests context task tasks goal goals background reason summary status problem issue
	step steps details detail info observation observations symptom symptoms target objective priority urgent important
	update situation question questions current now then next please ps kontext aufgabe ziel hintergrund grund problem
	frage anfrage bitte hinweis tâche contexte objectif demande raison problème question`)

// lineEnd is where the line holding b[from] ends: its line break, or the
// end of b.
func lineEnd(b []byte, from int) int {
	if nl := bytes.IndexByte(b[from:], '\n'); nl >= 0 {
		return from + nl
	}
	return len(b)
}

// opensBlock: a reporting sentence that ends opening what follows — a
// colon, a colon and a list's first number, "the following", a rule of
// dashes ("---------- Forwarded message ----------") — so the lines after
// it, to a blank line, are reported too.
var opensBlock = regexp.MustCompile(`(?i)(?::\s*(?:\d{1,2}|[a-z])?|\b(?:the following|as follows|folgendes|folgende|wie folgt|ce qui suit|suivant|suivante)\s*:?|-{3,}|={3,})\s*$`)

// listStart: a sentence cut at a list's first number ("… reads 1. set …").
var listStart = regexp.MustCompile(`\s1$`)

// readingAfter reports a number right after the reporting verb at
// words[k] ("Q2 reads 98 A", "the readback reads: 98 A"): what a device
// reads.
func readingAfter(text string, words [][2]int, k int) bool {
	rest := strings.TrimLeft(text[words[k][1]:], " :")
	return rest != "" && (rest[0] >= '0' && rest[0] <= '9' || rest[0] == '-' || rest[0] == '+') && !listNumber.MatchString(rest) // "reads: 1. set Q1…": a list's number
}

// recordVerbs ask for a record of a change ("… and note it in the
// logbook", "… und trag es ins Logbuch ein", "… et note-le dans le
// cahier").
var recordVerbs = wordSet(`make write note log record enter put add file send post mail email document update tell inform notify
	trag trage notiere notier schreib schreibe vermerke dokumentiere schick schicke
	note notez écris écrivez inscris inscrivez mets envoie envoyez documente`)

// ownRecord returns where the clause holding words[k] (the first word of
// its sentence that reports) starts when that clause is the user's own
// request for a record, after another clause ("…, and make an entry in
// the logbook", "…, I'll note it in the logbook"); 0 when it is not, or
// when a reporting verb or preposition after it may report what comes
// before ("…, and note it, as the procedure says").
func ownRecord(text string, words [][2]int, lower []string, k int) int {
	c := k
	for c > 0 && !strings.ContainsAny(text[words[c-1][1]:words[c][0]], ",;:—–()") && !joiner(lower[c-1]) {
		c--
	}
	if c == 0 {
		return 0
	}
	first := c
	for first < len(lower) && (fillers[lower[first]] || selfWords[lower[first]]) {
		first++
	}
	if first >= len(lower) || first > k || !recordVerbs[strings.TrimSuffix(strings.TrimSuffix(lower[first], "-le"), "-la")] {
		return 0
	}
	for j := k + 1; j < len(lower); j++ {
		if reportVerbs[lower[j]] && !readingAfter(text, words, j) || slices.ContainsFunc(reportPreps, func(p []string) bool {
			return j+len(p) <= len(lower) && slices.Equal(lower[j:j+len(p)], p)
		}) {
			return 0
		}
	}
	return c
}

// selfWords say the user does what follows ("I'll note it…").
var selfWords = wordSet(`i'll i we'll we will i'm going to ich werde wir je vais on va`)

// afterReport is what a reporting verb reports, without the "(you) to"
// that may lead it ("wants you to set Q1…" reports "set Q1…").
func afterReport(s string) string {
	t := strings.TrimLeft(s, " ,:")
	for _, p := range []string{"you to ", "us to ", "me to ", "them to ", "to "} {
		if len(t) >= len(p) && strings.EqualFold(t[:len(p)], p) {
			return t[len(p):]
		}
	}
	return t
}

// determiners may come before a source noun ("the logbook"); before a
// state word they make it part of a name ("the holding coil").
var determiners = wordSet(`the a an this that my our his her der die das den dem des ein eine einen im laut le la l' les un une ce cette`)

// reportedBy names who reports, for the operator: the source with its
// determiner and its verb ("the logbook says"), or the verb and what
// follows it ("said nobody").
func reportedBy(text string, words [][2]int, k int) string {
	word := func(i int) string { return strings.ToLower(text[words[i][0]:words[i][1]]) }
	from, to := k, k
	if reportVerbs[word(k)] {
		if k+1 < len(words) {
			to = k + 1
		}
	} else {
		if k > 0 && determiners[word(k-1)] {
			from = k - 1
		}
		if k+1 < len(words) && reportVerbs[word(k+1)] {
			to = k + 1
		}
	}
	parts := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		parts = append(parts, word(i))
	}
	return strings.Join(parts, " ")
}

// colonAfter returns the place after a label's colon at i (French puts a
// space before it: "Note de relève : …"), or -1; a colon inside a word
// ("BTS:MAG:Q1", "10:30") is none.
func colonAfter(text string, i int) int {
	for i < len(text) && text[i] == ' ' {
		i++
	}
	if i >= len(text) || text[i] != ':' {
		return -1
	}
	if i+1 < len(text) && text[i+1] != ' ' && text[i+1] != '\n' {
		return -1
	}
	return i + 1
}

// labelReports reports whether a label before a colon names a report:
// one of its last four words is a report noun or verb.
func labelReports(text string, words [][2]int) bool {
	for k := len(words) - 1; k >= 0 && k >= len(words)-4; k-- {
		w := strings.ToLower(text[words[k][0]:words[k][1]])
		if reportNouns[w] || reportVerbs[w] || materialLabels[w] {
			return true
		}
		for _, suf := range reportSuffixes {
			if len(w) > len(suf) && strings.HasSuffix(w, suf) {
				return true
			}
		}
	}
	return false
}

// sentences splits text at ".", "!", "?" followed by a space or the end,
// and at new lines: [start, end) byte ranges.
func sentences(s string) [][2]int {
	var out [][2]int
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		end := c == '\n' || (c == '.' || c == '!' || c == '?') && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n')
		if end {
			out = append(out, [2]int{start, i})
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

// wordSpans are the words of text (letters, digits, apostrophes, hyphens).
func wordSpans(text string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range text {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == '-' && start >= 0
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(text)})
	}
	return out
}

// wouldChange reports whether text, read as the user's own words, would
// ask for a change (so blanking it is worth a note).
func wouldChange(text string) bool {
	for _, c := range scan(text) {
		if readClause(text, c).change {
			return true
		}
	}
	return false
}

// hasChangeVerb reports whether text holds a change verb.
func hasChangeVerb(text string) bool {
	for _, c := range scan(text) {
		for _, t := range c.toks {
			if verbOf(t.w) != "" || germanInfinitives[t.w] {
				return true
			}
		}
	}
	return false
}
