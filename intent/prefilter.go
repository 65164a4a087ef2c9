package intent

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// The rules' larger patterns (hypotheticalPattern and its kin: alternations
// of a hundred phrases, tens of microseconds a message in the regexp
// engine) are tried only on a message that holds one of the strings every
// match must hold, worked out from the pattern itself (needed), so that a
// message without "would", "what if", "should i", … costs a few substring
// searches. The strings come from the pattern, never by hand: a phrase
// added to it cannot be missed.

// filtered is a regexp tried only when the text holds one of need.
type filtered struct {
	re   *regexp.Regexp
	need []string // nil: always tried
	// byFirst holds need by first byte: one pass over the text finds any
	// of a few hundred strings, where a search for each took longer than
	// the regexp.
	byFirst *[256][]string
	// pairs marks the first two bytes of each of need (a need of one byte
	// marks every pair it starts): most places in a text start no pair, and
	// are passed over without comparing a string.
	pairs *[1 << 16 / 64]uint64
}

// withNeed sets the strings a match needs.
func (f filtered) withNeed(need []string) filtered {
	f.need, f.byFirst, f.pairs = need, nil, nil
	if need != nil {
		f.byFirst = new([256][]string)
		f.pairs = new([1 << 16 / 64]uint64)
		for _, n := range need {
			f.byFirst[n[0]] = append(f.byFirst[n[0]], n)
			if len(n) == 1 {
				for c := range 256 {
					f.markPair(n[0], byte(c))
				}
			} else {
				f.markPair(n[0], n[1])
			}
		}
	}
	return f
}

func (f filtered) markPair(a, b byte) {
	p := uint(a)<<8 | uint(b)
	f.pairs[p/64] |= 1 << (p % 64)
}

func (f filtered) hasPair(a, b byte) bool {
	p := uint(a)<<8 | uint(b)
	return f.pairs[p/64]&(1<<(p%64)) != 0
}

// mustFilter compiles expr (case-sensitive: it is matched against
// lowercased text) with the strings its matches need.
func mustFilter(expr string) filtered {
	re := regexp.MustCompile(expr)
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		panic(err)
	}
	return filtered{re: re}.withNeed(needed(parsed.Simplify()))
}

// MatchString reports whether s holds a match.
func (f filtered) MatchString(s string) bool {
	return f.mayMatch(s) && f.re.MatchString(s)
}

// FindStringSubmatch is the pattern's, when its needed strings are there.
func (f filtered) FindStringSubmatch(s string) []string {
	if !f.mayMatch(s) {
		return nil
	}
	return f.re.FindStringSubmatch(s)
}

// mayMatch reports whether s holds one of the strings a match needs.
func (f filtered) mayMatch(s string) bool {
	if f.need == nil {
		return true
	}
	for i := 0; i < len(s); i++ {
		if i+1 < len(s) && !f.hasPair(s[i], s[i+1]) {
			continue
		}
		for _, n := range f.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], n) {
				return true
			}
		}
	}
	return false
}

// filteredEach is an alternation tried phrase by phrase: one pass over the
// text finds the strings the phrases need (as filtered does), and only the
// phrases whose strings are there are tried, each a small regexp. One
// alternation of sixty phrases cost the regexp engine tens of microseconds
// a message, since strings such as "at " and "in " are in most messages.
type filteredEach struct {
	index  filtered         // every phrase's strings; its re is unused
	by     map[string][]int // a string → the phrases that need it
	res    []*regexp.Regexp
	always []int // phrases that need nothing: always tried
}

// mustFilterEach compiles each of exprs (matched against lowercased text),
// with the strings its matches need.
func mustFilterEach(exprs ...string) filteredEach {
	fe := filteredEach{by: map[string][]int{}}
	var all []string
	for k, e := range exprs {
		parsed, err := syntax.Parse(e, syntax.Perl)
		if err != nil {
			panic(err)
		}
		fe.res = append(fe.res, regexp.MustCompile(e))
		need := needed(parsed.Simplify())
		if need == nil {
			fe.always = append(fe.always, k)
			continue
		}
		for _, n := range need {
			if _, ok := fe.by[n]; !ok {
				all = append(all, n)
			}
			fe.by[n] = append(fe.by[n], k)
		}
	}
	fe.index = filtered{}.withNeed(all)
	return fe
}

// MatchString reports whether one of the phrases matches in s.
func (fe filteredEach) MatchString(s string) bool {
	for _, k := range fe.always {
		if fe.res[k].MatchString(s) {
			return true
		}
	}
	var tried []bool
	for i := 0; i < len(s); i++ {
		if i+1 < len(s) && !fe.index.hasPair(s[i], s[i+1]) {
			continue
		}
		for _, n := range fe.index.byFirst[s[i]] {
			if !strings.HasPrefix(s[i:], n) {
				continue
			}
			for _, k := range fe.by[n] {
				if tried == nil {
					tried = make([]bool, len(fe.res))
				}
				if !tried[k] {
					tried[k] = true
					if fe.res[k].MatchString(s) {
						return true
					}
				}
			}
		}
	}
	return false
}

// foldFiltered is a case-insensitive regexp ("(?i)…") tried only when the
// text, case-folded (foldCase), holds one of the strings its matches need.
type foldFiltered struct{ filtered }

// mustFilterFold compiles expr, which must start with "(?i)" and set no
// other flag, with the strings its matches need, lower case.
func mustFilterFold(expr string) foldFiltered {
	body, ok := strings.CutPrefix(expr, "(?i)")
	if !ok || strings.Contains(strings.ReplaceAll(body, "(?:", ""), "(?") {
		panic("intent: a case-insensitive filtered pattern starts with (?i) and sets no other flag: " + expr)
	}
	f := mustFilter(body) // the needed strings, as written: lower case
	f.re = regexp.MustCompile(expr)
	return foldFiltered{f}
}

// FindStringIndex is the regexp's, on a text that may hold a match.
func (f foldFiltered) FindStringIndex(s string) []int {
	if !f.mayMatch(foldCase(s)) {
		return nil
	}
	return f.re.FindStringIndex(s)
}

// foldCase maps every letter that "(?i)" matches with a lower-case one to
// that letter (TestFoldCaseCoversTheFoldOrbits): strings.ToLower does for
// all but the long s, "ſ", which (?i) matches with "s".
func foldCase(s string) string {
	s = strings.ToLower(s)
	if strings.Contains(s, "ſ") {
		s = strings.ReplaceAll(s, "ſ", "s")
	}
	return s
}

// maxSet bounds the sets of strings worked out: beyond it a part of the
// pattern is taken as needing nothing.
const maxSet = 256

// needed returns strings one of which every match of re holds, or nil
// when it cannot tell. Assertions (\b, ^, $) are read as matching the
// empty string, which only widens what is matched: a string every match
// of the wider pattern holds, every match of the pattern holds.
func needed(re *syntax.Regexp) []string {
	if set, ok := exactly(re); ok {
		if slices.Contains(set, "") {
			return nil
		}
		return minimal(set)
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return needed(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return needed(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			n := needed(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		return minimal(all)
	case syntax.OpConcat:
		return neededOfConcat(re.Sub)
	}
	return nil
}

// neededOfConcat is needed of a concatenation: every match holds a match
// of each part, so any part's set will do, and a run of parts matching
// finite sets of strings gives their products, longer and rarer than each.
// The best set is the one whose shortest string is longest.
func neededOfConcat(subs []*syntax.Regexp) []string {
	var best []string
	consider := func(set []string) {
		if set == nil || slices.Contains(set, "") {
			return
		}
		if best == nil || shortest(set) > shortest(best) || shortest(set) == shortest(best) && len(set) < len(best) {
			best = set
		}
	}
	var run []string // the product of the current run of exact parts
	inRun := false
	for _, sub := range subs {
		set, ok := exactly(sub)
		if !ok {
			if inRun {
				consider(run)
			}
			run, inRun = nil, false
			consider(needed(sub))
			continue
		}
		if !inRun {
			run, inRun = set, true
			continue
		}
		if p := product(run, set); p != nil {
			run = p
		} else {
			consider(run)
			run = set
		}
	}
	if inRun {
		consider(run)
	}
	if best == nil {
		return nil
	}
	return minimal(best)
}

// exactly returns the strings re matches when they are few, assertions
// read as empty (see needed).
func exactly(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		var set []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi-lo >= 16 || len(set)+int(hi-lo)+1 > 16 {
				return nil, false
			}
			for r := lo; r <= hi; r++ {
				if !utf8.ValidRune(r) {
					return nil, false
				}
				set = append(set, string(r))
			}
		}
		return set, len(set) > 0
	case syntax.OpCapture:
		return exactly(re.Sub[0])
	case syntax.OpQuest:
		set, ok := exactly(re.Sub[0])
		if !ok {
			return nil, false
		}
		return dedupe(append(set, "")), true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			set, ok := exactly(sub)
			if !ok {
				return nil, false
			}
			if out = product(out, set); out == nil {
				return nil, false
			}
		}
		return out, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			set, ok := exactly(sub)
			if !ok || len(out)+len(set) > maxSet {
				return nil, false
			}
			out = append(out, set...)
		}
		return dedupe(out), true
	}
	return nil, false
}

// product is every a followed by every b, or nil beyond maxSet.
func product(a, b []string) []string {
	if len(a)*len(b) > maxSet {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return dedupe(out)
}

func shortest(set []string) int {
	n := len(set[0])
	for _, s := range set[1:] {
		n = min(n, len(s))
	}
	return n
}

// dedupe sorts set and drops repeats.
func dedupe(set []string) []string {
	slices.Sort(set)
	return slices.Compact(set)
}

// minimal is a set of needed strings without those holding another of
// the set: a text holding the longer holds the shorter.
func minimal(set []string) []string {
	set = dedupe(set)
	var out []string
	for _, s := range set {
		covered := false
		for _, t := range set {
			if t != s && strings.Contains(s, t) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	return out
}
