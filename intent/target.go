package intent

import (
	"strings"
	"unicode"
)

// An identifier is a numbered name the user stated for what to change:
// "Q1" (glued: letters and number in one word, a device code) or
// "cavity 2", "sector 3" (spaced: a word and a number). Numbers tell one
// device from its siblings, so they are what a target must agree on.
type identifier struct {
	letters string
	num     string // without leading zeros
	glued   bool
}

func (id identifier) String() string {
	if id.glued {
		return strings.ToUpper(id.letters) + id.num
	}
	return id.letters + " " + id.num
}

// notNames are words that never name a thing when a number follows them.
var notNames = map[string]bool{"to": true, "at": true, "by": true, "from": true, "the": true, "of": true, "in": true,
	"on": true, "for": true, "and": true, "or": true, "than": true, "with": true, "is": true, "it": true, "be": true,
	"about": true, "around": true, "above": true, "below": true, "under": true, "over": true, "last": true, "first": true,
	"set": true, "change": true, "adjust": true, "value": true, "number": true, "step": true, "steps": true,
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

// statedIdentifiers returns the identifiers in a target as the user named
// it. A number listed after an identifier ("cavities 1 and 2", "cavity 1,
// 2 or 3") takes its name.
func statedIdentifiers(target string) []identifier {
	ws := words(target)
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
		case (prev == "and" || prev == "or" || allDigits(prev)) && len(out) > 0:
			last := out[len(out)-1]
			out = append(out, identifier{letters: last.letters, num: trimZeros(w), glued: last.glued})
		}
	}
	return out
}

// candidateNames are the numbered names in a text an action targets (a
// channel name "SR:RF:CAV2:VOLT", a step objective): glued words, a word
// followed by a number, and bare numbers (no letters).
func candidateNames(text string) []identifier {
	ws := words(text)
	var out []identifier
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
// one abbreviates the other with at least three letters ("cav"/"cavity").
func sameName(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || len(a) >= 3 && strings.HasPrefix(b, a)
}

// agrees reports whether a text an action targets agrees with identifier
// id the user stated. A device code (Q1) must be there with its number. A
// spaced name (cavity 2) may be absent, since a channel name need not say
// everything the user said ("in sector 3"), but when the text names the
// same thing it must carry the same number (CAV1 is not cavity 2).
func (id identifier) agrees(cands []identifier) bool {
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
	cands := candidateNames(text)
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

// patternTarget reports a target that is a pattern rather than a name: a
// wildcard ("BTS:MAG:Q*"), a character class or range ("Q[1-9]", "Q[^2]")
// or alternatives ("Q{1,2}", "Q1|Q2"). An index ("WF[3]") is a name.
func patternTarget(t string) bool {
	if strings.ContainsAny(t, "*?|") {
		return true
	}
	if i := strings.IndexByte(t, '{'); i >= 0 && strings.IndexByte(t[i:], '}') > 0 {
		return true
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
