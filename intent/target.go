package intent

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An identifier is a numbered name the user stated for what to change:
// "Q1" (glued: letters and number in one word, a device code) or
// "cavity 2", "sector 3" (spaced: a word and a number). Numbers tell one
// device from its siblings, so they are what a target must agree on.
type identifier struct {
	letters string
	num     string // without leading zeros
	glued   bool
	// code is a device code of another shape, letters and digits mixed
	// ("Q1A", "S1Q1", "1Q1", "Q1-A"): lower-case, without - and _ and the
	// leading zeros of its numbers (codeOf). It must be in the target as
	// it is, since no part of it tells one device from its siblings alone.
	code string
}

func (id identifier) String() string {
	if id.code != "" {
		return strings.ToUpper(id.code)
	}
	if id.glued {
		return strings.ToUpper(id.letters) + id.num
	}
	return id.letters + " " + id.num
}

// letterWords are the one-letter words of the three languages, which name
// nothing before a number ("a 1", "à 2", "y 3").
var letterWords = map[string]bool{"a": true, "i": true, "o": true, "y": true, "à": true, "e": true, "x": true}

// notNames are words that never name a thing when a number follows them.
var notNames = map[string]bool{"to": true, "at": true, "by": true, "from": true, "the": true, "of": true, "in": true,
	"on": true, "for": true, "and": true, "or": true, "than": true, "with": true, "is": true, "it": true, "be": true,
	"about": true, "around": true, "above": true, "below": true, "under": true, "over": true, "last": true, "first": true,
	"set": true, "change": true, "adjust": true, "value": true, "number": true, "step": true, "steps": true,
	"make": true, "that": true, "this": true, "mach": true, "mache": true,
	// German and French: prepositions, articles, verbs before a number.
	"auf": true, "um": true, "von": true, "bei": true, "zu": true, "mit": true, "für": true, "über": true, "unter": true,
	"den": true, "dem": true, "der": true, "die": true, "das": true, "ist": true, "und": true, "oder": true, "letzten": true,
	"setze": true, "stelle": true, "erhöhe": true, "senke": true, "à": true, "de": true, "du": true, "des": true, "sur": true,
	"par": true, "le": true, "la": true, "les": true, "et": true, "ou": true, "mets": true, "règle": true, "passe": true,
	"dernières": true, "derniers": true}

// words splits lower-cased text on everything but letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// splitGlued splits "q1" into ("q", "1"); ok is false unless the word is
// letters followed by digits.
func splitGlued(w string) (letters, num string, ok bool) {
	i := strings.IndexFunc(w, unicode.IsDigit)
	if i <= 0 || !allLetters(w[:i]) || !allDigits(w[i:]) {
		return "", "", false
	}
	return w[:i], trimZeros(w[i:]), true
}

func allLetters(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) < 0
}

func allDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

func trimZeros(n string) string {
	t := strings.TrimLeft(n, "0")
	if t == "" {
		return "0"
	}
	return t
}

// key tells identifiers apart: the same key, the same name.
func (id identifier) key() string {
	if id.code != "" {
		return "#" + id.code
	}
	return id.letters + id.num
}

// codeOf returns the device code a word is, when it mixes letters and
// digits otherwise than as a name and a number ("Q1", which identifier
// reads) or a number and a unit ("105A", "3GeV", "2nd"): "Q1A", "S1Q1",
// "1Q1", "QF3B". The code is lower-case and its numbers are without
// leading zeros ("Q01A" is "q1a").
func codeOf(w string) (string, bool) {
	if !strings.ContainsFunc(w, unicode.IsLetter) || !strings.ContainsFunc(w, unicode.IsDigit) {
		return "", false
	}
	if _, _, ok := splitGlued(w); ok {
		return "", false
	}
	if unicode.IsDigit(rune(w[0])) {
		i := strings.IndexFunc(w, unicode.IsLetter)
		if suffix := w[i:]; allLetters(suffix) && (KnownUnit(suffix) || ordinalSuffixes[suffix] || timeWords[suffix]) {
			return "", false // "105a", "3gev", "2nd", "24h": a quantity or an ordinal
		}
	}
	var b strings.Builder
	digits := ""
	flush := func() {
		if digits != "" {
			b.WriteString(trimZeros(digits))
			digits = ""
		}
	}
	for _, r := range w {
		if r >= '0' && r <= '9' {
			digits += string(r)
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String(), true
}

// ordinalSuffixes make a number an ordinal ("2nd", "3e", "4.").
var ordinalSuffixes = wordSet(`st nd rd th e er ère eme ème te ten ter`)

// splitCodes returns the device codes in text, as identifiers, and the
// words of the rest. A code is a word codeOf reads, or a name and number
// with one letter after a "-" or "_" ("Q1-A", "Q1_A": the code q1a), whose
// parts name nothing on their own ("Q1" is not a name in "Q1-A").
func splitCodes(text string) (ws []string, ids []identifier) {
	lower := strings.ToLower(text)
	var sep byte // the byte after the last word kept in ws
	for i := 0; i < len(lower); {
		r, size := utf8.DecodeRuneInString(lower[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(lower) {
			r2, s2 := utf8.DecodeRuneInString(lower[j:])
			if !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
				break
			}
			j += s2
		}
		w, before := lower[i:j], sep
		sep = 0
		if j < len(lower) {
			sep = lower[j]
		}
		i = j
		if c, ok := codeOf(w); ok {
			ids = append(ids, identifier{code: c})
			sep = 0 // a code's letter after a "-" is no second code
			continue
		}
		if n := len(ws); n > 0 && (before == '-' || before == '_') && utf8.RuneCountInString(w) == 1 && allLetters(w) {
			if l, num, ok := splitGlued(ws[n-1]); ok {
				ws = ws[:n-1]
				ids = append(ids, identifier{code: l + num + w})
				sep = 0
				continue
			}
		}
		ws = append(ws, w)
	}
	return ws, ids
}

// statedIdentifiers returns the identifiers in a target as the user named
// it. A number listed after an identifier ("cavities 1 and 2", "cavity 1,
// 2 or 3") takes its name; a device code of another shape is one (codes).
func statedIdentifiers(target string) []identifier {
	ws, codes := splitCodes(target)
	var out []identifier
	for k, w := range ws {
		if l, n, ok := splitGlued(w); ok {
			out = append(out, identifier{letters: l, num: n, glued: true})
			continue
		}
		if !allDigits(w) || k == 0 {
			continue
		}
		prev := ws[k-1]
		switch {
		case allLetters(prev) && len(prev) > 1 && !notNames[prev]:
			out = append(out, identifier{letters: prev, num: trimZeros(w)})
			// "la cavité RF 2", "le correcteur vertical 2": a short word or
			// one of the opposites between a noun and the number qualifies
			// the noun, which the number names as well.
			if k >= 2 && (len(prev) <= 3 || oppositeWord(prev)) && allLetters(ws[k-2]) && utf8.RuneCountInString(ws[k-2]) >= 4 && !notNames[ws[k-2]] {
				out = append(out, identifier{letters: ws[k-2], num: trimZeros(w)})
			}
		case utf8.RuneCountInString(prev) == 1 && allLetters(prev) && !letterWords[prev]:
			// "Q 1", "q-1": a device code typed apart, read as the code (Q1).
			out = append(out, identifier{letters: prev, num: trimZeros(w), glued: true})
		case (prev == "and" || prev == "or" || allDigits(prev)) && len(out) > 0:
			last := out[len(out)-1]
			out = append(out, identifier{letters: last.letters, num: trimZeros(w), glued: last.glued})
		}
	}
	return append(out, codes...)
}

// candidateNames are the numbered names in a text an action targets (a
// channel name "SR:RF:CAV2:VOLT", a step objective): glued words, a word
// followed by a number, and bare numbers (no letters).
func candidateNames(text string) []identifier {
	ws, out := splitCodes(text)
	for k, w := range ws {
		if l, n, ok := splitGlued(w); ok {
			out = append(out, identifier{letters: l, num: n, glued: true})
			continue
		}
		if allDigits(w) {
			id := identifier{num: trimZeros(w)}
			if k > 0 && allLetters(ws[k-1]) {
				id.letters = ws[k-1]
			} else if k > 0 {
				if l, _, ok := splitGlued(ws[k-1]); ok {
					id.letters, id.glued = l, true // "Q1-2", "Q1/2": the second number takes the name
				}
			}
			out = append(out, id)
		}
	}
	return out
}

// sameName reports whether two name stems mean the same thing: equal, or
// one abbreviates the other with at least three letters ("cav"/"cavity",
// "cav"/"Kavität": foldName).
func sameName(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if a == b {
		return true
	}
	if len(a) < 3 {
		return false
	}
	a, b = foldName(a), foldName(b)
	if strings.HasPrefix(b, a) {
		return true
	}
	// Two spellings of one word ("secteur"/"sector", "cavité"/"cavity"):
	// both of five letters or more, the first four alike.
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return len(a) >= 5 && len(b) >= 5 && n >= 4
}

// nameFolding spells a name's word as English spells it, to compare its
// first letters: accents dropped, a German k as c ("Kavität" is cavity,
// "Sektor" sector, "Korrektor" corrector; "cavité" is cavity).
var nameFolding = strings.NewReplacer("ä", "a", "ö", "o", "ü", "u", "é", "e", "è", "e", "ê", "e", "à", "a", "â", "a",
	"î", "i", "ï", "i", "ô", "o", "û", "u", "ù", "u", "ç", "c", "k", "c")

func foldName(w string) string { return nameFolding.Replace(w) }

// agrees reports whether a text an action targets agrees with identifier
// id the user stated. A device code (Q1) must be there with its number. A
// spaced name (cavity 2) may be absent, since a channel name need not say
// everything the user said ("in sector 3"), but when the text names the
// same thing it must carry the same number (CAV1 is not cavity 2).
func (id identifier) agrees(cands []identifier) bool {
	if id.code != "" {
		return slices.ContainsFunc(cands, func(c identifier) bool { return c.code == id.code })
	}
	named := false
	for _, c := range cands {
		if sameName(id.letters, c.letters) {
			if c.num == id.num {
				return true
			}
			named = true
		}
	}
	return !id.glued && !named
}

// unstatedName returns a name in the target an action executes on
// (capabilities.Change.Target, the application's) of the same kind as one
// the user stated but with another number: "set Q1…" and a target naming
// "BTS:MAG:Q1:CURRENT,BTS:MAG:Q2:CURRENT" would change Q2 as well.
func unstatedName(target string, fit []RequestedChange) (identifier, bool) {
	var stated []identifier
	for _, rc := range fit {
		stated = append(stated, statedIdentifiers(rc.named())...)
	}
	for _, c := range candidateNames(target) {
		kind, same := false, false
		for _, id := range stated {
			if sameName(id.letters, c.letters) {
				kind = true
				same = same || id.num == c.num
			}
		}
		if kind && !same {
			return c, true
		}
	}
	return identifier{}, false
}

// targetAgrees reports whether the stated target agrees with the text, and
// the first identifier that does not. Identifiers with the same name are
// alternatives ("Q1 and Q2": either may be the target); names differing
// must all agree ("Q1 in sector 3").
func targetAgrees(stated, text string) (bool, identifier) {
	return targetAgreesWith(stated, candidateNames(text))
}

// describedNames are the names of a target an action executes on: those
// of its text (candidateNames) and the spaced ones of its description
// ("sector 3" in "… in storage ring sector 3"). A description's device
// codes do not count: it may name a neighbour ("downstream of Q2").
func describedNames(text, description string) []identifier {
	cands := candidateNames(text)
	for _, c := range candidateNames(description) {
		if !c.glued && c.code == "" && c.letters != "" {
			cands = append(cands, c)
		}
	}
	return cands
}

// targetAgreesWith is targetAgrees against the names cands.
func targetAgreesWith(stated string, cands []identifier) (bool, identifier) {
	ids := statedIdentifiers(stated)
	for k, id := range ids {
		ok := false
		for _, alt := range ids {
			if alt.letters == id.letters && alt.agrees(cands) {
				ok = true
				break
			}
		}
		if !ok {
			return false, ids[k]
		}
	}
	return true, identifier{}
}

// namesNone returns the user's spaced names when the names of a target
// (describedNames) hold none of them ("cavity 2" and LINAC:KLY1:HV;
// "sector 3" and SR:C04:QF:CURRENT): a spaced name may be absent from a
// target ("in sector 3"), but a target that carries nothing of what the
// user named is another device. A name is held by its word; by its number
// too when the application gave no description (a terse name, SR:C03:…,
// may say "sector" only as a number). "" when the user gave a device code
// or no spaced name, or the target holds one; targetAgrees holds the
// number.
func namesNone(stated string, cands []identifier, described bool) string {
	ids := statedIdentifiers(stated)
	var spaced []string
	for _, id := range ids {
		if id.glued || id.code != "" {
			return ""
		}
		spaced = append(spaced, id.String())
	}
	if len(spaced) == 0 {
		return ""
	}
	for _, id := range ids {
		if slices.ContainsFunc(cands, func(c identifier) bool { return sameName(id.letters, c.letters) || !described && c.num == id.num }) {
			return ""
		}
	}
	return strings.Join(slices.Compact(spaced), ", ")
}

// opposites are pairs of words that tell one device from its twin where
// no number does: the focusing and the defocusing quadrupole of a sector,
// the horizontal (x) and the vertical (y) corrector, the upstream and the
// downstream one, a scraper's left and right jaw, a slit's entrance and
// exit (English, German, French). A side's synonyms share it ("lower" and
// "bottom"), so they never refuse each other.
var opposites = [][2]map[string]bool{
	{wordSet(`focusing fokussierend fokussierende fokussierenden focalisant focalisante`),
		wordSet(`defocusing defokussierend defokussierende defokussierenden défocalisant défocalisante`)},
	{wordSet(`horizontal horizontale horizontalen x`), wordSet(`vertical vertikal vertikale vertikalen verticale y`)}, // x: an accelerator's horizontal plane
	{wordSet(`upstream stromaufwärts amont`), wordSet(`downstream stromabwärts aval`)},
	{wordSet(`inner innere inneren intérieur intérieure`), wordSet(`outer äußere äußeren extérieur extérieure`)},
	{wordSet(`forward vorlauf incidente`), wordSet(`reflected rücklauf réfléchie réfléchi`)},
	{wordSet(`injection injektion`), wordSet(`extraction extraktion`)},
	{wordSet(`left links linke linken linker gauche`), wordSet(`right rechts rechte rechten rechter droite droit`)},
	{wordSet(`top upper oben obere oberen oberer haut haute supérieur supérieure`),
		wordSet(`bottom lower unten untere unteren unterer bas basse inférieur inférieure`)},
	{wordSet(`entrance entry inlet input eingang eintritt eingangs entrée`), wordSet(`exit outlet output ausgang austritt ausgangs sortie`)},
	{wordSet(`north nord nördliche nördlichen`), wordSet(`south süd sud südliche südlichen`)},
	{wordSet(`east ost östliche östlichen`), wordSet(`west ouest westliche westlichen`)},
	{wordSet(`primary main haupt principal principale`), wordSet(`backup spare standby secondary reserve ersatz secours`)},
}

// oppositeWord reports whether w is one of the opposites.
func oppositeWord(w string) bool {
	for _, p := range opposites {
		if p[0][w] || p[1][w] {
			return true
		}
	}
	return false
}

// oppositeNamed returns the word of a target (has: its name's tokens and
// its description's words) that is the opposite of one of the user's
// words (said) naming it, or "" when none is.
func oppositeNamed(said, has []string) string {
	in := func(ws []string, set map[string]bool) string {
		for _, w := range ws {
			if set[w] {
				return w
			}
		}
		return ""
	}
	for _, p := range opposites {
		for k := range 2 {
			mine, other := p[k], p[1-k]
			if in(said, mine) != "" && in(said, other) == "" && in(has, mine) == "" {
				if w := in(has, other); w != "" {
					return w
				}
			}
		}
	}
	return ""
}

// patternTarget reports a target that is a pattern rather than a name: a
// wildcard ("BTS:MAG:Q*"), a character class or range ("Q[1-9]", "Q[^2]")
// or alternatives ("Q{1,2}", "Q{1..3}", "Q1|Q2"). An index ("WF[3]") and
// braces around a part of a name ("SR:C01-MG{PS:QH1A}I:Sp1-SP", as NSLS-II
// names its channels) are names.
func patternTarget(t string) bool {
	if strings.ContainsAny(t, "*?|") {
		return true
	}
	for rest := t; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		if in := rest[i+1 : i+j]; strings.Contains(in, ",") || strings.Contains(in, "..") {
			return true
		}
		rest = rest[i+j:]
	}
	for i := strings.IndexByte(t, '['); i >= 0; {
		j := strings.IndexByte(t[i:], ']')
		if j < 0 {
			return false
		}
		if strings.ContainsFunc(t[i+1:i+j], func(r rune) bool { return r < '0' || r > '9' }) {
			return true
		}
		next := strings.IndexByte(t[i+j:], '[')
		if next < 0 {
			return false
		}
		i += j + next
	}
	return false
}
