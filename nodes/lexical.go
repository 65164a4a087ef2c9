package nodes

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/typo"
)

// BM25 parameters (the usual values).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// lexicalIndex scores a task against each capability's description,
// classifier instructions and positive example queries with BM25: the
// offline classifier.
type lexicalIndex struct {
	names []string
	tf    []map[string]float64
	// core holds the words of the name, description and instructions.
	core   []map[string]bool
	length []float64
	df     map[string]int
	avgLen float64
	// examples per capability, tokenized, for the nearest-example veto.
	pos, neg [][][]string
	// counter holds, per capability, the words of its negated phrases
	// ("not their history") that it never uses affirmatively.
	counter []map[string]bool
	// vocab is every indexed word, sorted, for typo and abbreviation
	// matching of unknown task words.
	vocab []string
}

// exampleWeight discounts words that come from example queries: their nouns
// ("vacuum in sector 3") are incidental, the description and instructions
// say what the capability is for.
const exampleWeight = 0.3

// vetoSimilarity is how close (Jaccard) a task must be to a negative example
// for it to veto the capability.
const vetoSimilarity = 0.5

// lexicalScore is one capability's lexical relevance.
type lexicalScore struct {
	Capability string
	Score      float64
	// Core is set when a word of the task is in the capability's name,
	// description or instructions (not only in its examples).
	Core bool
}

func newLexicalIndex(caps []capabilities.Capability) *lexicalIndex {
	ix := &lexicalIndex{df: map[string]int{}}
	total := 0.0
	for _, c := range caps {
		if isTerminal(c.Name()) {
			continue
		}
		tf := map[string]float64{}
		add := func(text string, w float64) {
			for _, t := range tokenizeAffirmative(text) {
				tf[t] += w
			}
		}
		core := map[string]bool{}
		add(strings.ReplaceAll(c.Name(), "_", " ")+" "+c.Description(), 1)
		var pos, neg [][]string
		if gp, ok := c.(capabilities.ClassifierGuideProvider); ok {
			if g := gp.ClassifierGuide(); g != nil {
				add(g.Instructions, 1)
				for _, t := range tokenizeAffirmative(g.Instructions) {
					core[t] = true
				}
				for _, ex := range g.Examples {
					if ex.Result {
						add(ex.Query, exampleWeight)
						pos = append(pos, tokenize(ex.Query))
					} else {
						neg = append(neg, tokenize(ex.Query))
					}
				}
			}
		}
		for _, t := range tokenizeAffirmative(strings.ReplaceAll(c.Name(), "_", " ") + " " + c.Description()) {
			core[t] = true
		}
		counter := map[string]bool{}
		negated := negatedWords(c.Description())
		if gp, ok := c.(capabilities.ClassifierGuideProvider); ok {
			if g := gp.ClassifierGuide(); g != nil {
				negated = append(negated, negatedWords(g.Instructions)...)
			}
		}
		for _, t := range negated {
			// A word the capability's own description or instructions use
			// affirmatively is no exclusion; one its examples happen to use
			// still is ("What would happen if I set Q1…" reads, it does not set).
			if !core[t] && !weakWords[t] {
				counter[t] = true
			}
		}
		n := 0.0
		for t, f := range tf {
			n += f
			ix.df[t]++
		}
		ix.names = append(ix.names, c.Name())
		ix.tf = append(ix.tf, tf)
		ix.core = append(ix.core, core)
		ix.length = append(ix.length, n)
		ix.pos = append(ix.pos, pos)
		ix.neg = append(ix.neg, neg)
		ix.counter = append(ix.counter, counter)
		total += n
	}
	if len(ix.tf) > 0 {
		ix.avgLen = total / float64(len(ix.tf))
	}
	for t := range ix.df {
		ix.vocab = append(ix.vocab, t)
	}
	slices.Sort(ix.vocab)
	return ix
}

// scores returns every capability's score for the task, best first. A
// capability whose nearest example is a negative one at least
// vetoSimilarity close scores 0: its guide says "not for this". So does a
// capability whose description or instructions exclude a word of the task
// ("not their history" and the task asks for the history). Task words no
// capability uses are read as abbreviations or typos of indexed words
// (matchUnknown).
func (ix *lexicalIndex) scores(task string) []lexicalScore {
	q := ix.matchUnknown(tokenize(task))
	slices.Sort(q)
	q = slices.Compact(q)
	// Exclusions apply to what the task asks, not to what it negates:
	// "don't change anything, just read Q1" does not ask for a change.
	asked := ix.matchUnknown(tokenizeAffirmative(task))
	n := float64(len(ix.tf))
	out := make([]lexicalScore, len(ix.tf))
	for i, tf := range ix.tf {
		s, core, strong := 0.0, false, false
		for _, t := range q {
			f := tf[t]
			if f == 0 {
				continue
			}
			strong = strong || !weakWords[t]
			core = core || ix.core[i][t]
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*ix.length[i]/ix.avgLen))
		}
		if bn := maxSimilarity(q, ix.neg[i]); bn >= vetoSimilarity && bn > maxSimilarity(q, ix.pos[i]) {
			s = 0
		}
		if slices.ContainsFunc(asked, func(t string) bool { return ix.counter[i][t] }) {
			s = 0
		}
		if !strong {
			s = 0 // only common words matched: "current time", "thanks, that's all for now"
		}
		out[i] = lexicalScore{Capability: ix.names[i], Score: s, Core: core && s > 0}
	}
	slices.SortStableFunc(out, func(a, b lexicalScore) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

// maxSimilarity is the best Jaccard similarity of the (sorted, unique) query
// tokens to any example.
func maxSimilarity(q []string, examples [][]string) float64 {
	best := 0.0
	for _, ex := range examples {
		e := slices.Clone(ex)
		slices.Sort(e)
		e = slices.Compact(e)
		inter := 0
		for _, t := range e {
			if _, ok := slices.BinarySearch(q, t); ok {
				inter++
			}
		}
		union := len(q) + len(e) - inter
		if union > 0 {
			best = max(best, float64(inter)/float64(union))
		}
	}
	return best
}

// selectLexical picks capabilities scoring at least relative × the best
// score that either share a word of their description or instructions with
// the task or score at least threshold. The absolute threshold alone would
// fail small registries: BM25's idf gives a word every capability shares
// (two capabilities both about "beam current") almost no weight. A match
// through example words only counts when no capability shares a word of its
// description or instructions with the task: an example's nouns ("Set the
// Q1 current in the BTS line") must not pull a capability into a task whose
// words another capability states as its own.
func (ix *lexicalIndex) selectLexical(task string, threshold, relative float64) []string {
	sc := ix.scores(task)
	if len(sc) == 0 || sc[0].Score <= 0 {
		return nil
	}
	anyCore := slices.ContainsFunc(sc, func(s lexicalScore) bool { return s.Core })
	eligible := func(s lexicalScore) bool { return s.Score > 0 && (s.Core || !anyCore && s.Score >= threshold) }
	best := 0.0
	for _, s := range sc {
		if eligible(s) {
			best = max(best, s.Score)
		}
	}
	var out []string
	for _, s := range sc {
		if eligible(s) && s.Score >= relative*best {
			out = append(out, s.Capability)
		}
	}
	return out
}

var stopwords = map[string]bool{}

// weakWords are everyday words that count towards a capability's score but
// never select it on their own: "What is the current time?" is not a request
// for the archive (its description says "time range") nor for a beam
// current, and "that is all for now" does not ask for a live reading. The
// list holds stems (see stem).
var weakWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can could do does for from get give has have how i in
	into is it its me my of on or please show tell that the their them then there these this to us was we what
	when where which who will with would you your our any all some about also just let lets need want
	whats thats hows wheres whos theres heres im ive id youre were isnt arent wasnt dont doesnt didnt cant wont`) {
		stopwords[w] = true
	}
	for _, w := range strings.Fields(`now current currently today time status state thank thanks hello hi hey good great
	fine ok okay yes no right new old thing things something anything everything value values help know like see look
	much many more less here well really very still again one way last next bye goodbye`) {
		weakWords[stem(w)] = true
	}
}

// tokenize lower-cases, splits on non-alphanumerics (also "_" and "-"),
// drops stop words, strips common English suffixes so "reading", "reads"
// and "read" meet, and maps synonyms to one word ("raise", "bump" and
// "adjust" are "set").
func tokenize(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(strings.ReplaceAll(s, "'", "")), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if stopwords[f] || len(f) < 2 {
			continue
		}
		t := stem(f)
		if c, ok := lexicalSynonyms[t]; ok {
			t = c
		}
		out = append(out, t)
	}
	return out
}

// lexicalSynonyms map stems of everyday words to the stem a capability's
// description most likely uses: the verbs of changing a setting (to "set":
// "change" also asks how something changed in the past), and the words for
// the past. Domain words (a machine's quantities) are the
// application's to state, in its descriptions and instructions.
var lexicalSynonyms = map[string]string{}

func init() {
	for canon, words := range map[string]string{
		"set":     "modify adjust raise lower increase decrease bump ramp tweak alter",
		"history": "historical trend archive archived past evolution",
		"mean":    "average avg",
	} {
		for _, w := range strings.Fields(words) {
			lexicalSynonyms[stem(w)] = stem(canon)
		}
	}
}

// matchUnknown replaces each task word that no capability uses by the
// indexed word it abbreviates (the only indexed word of at least four
// letters it starts: "temp", "vac", "quad") or misspells (the closest within
// typo.MaxEdits, same first letter: "curent", "vaccum", "histroy"). Other
// words are kept; they match nothing.
func (ix *lexicalIndex) matchUnknown(q []string) []string {
	out := make([]string, len(q))
	for i, t := range q {
		out[i] = t
		if ix.df[t] > 0 || weakWords[t] {
			continue
		}
		if w, ok := ix.abbreviated(t); ok {
			out[i] = w
		} else if w, ok := closestWord(t, ix.vocab, func(w string) int { return ix.df[w] }); ok {
			out[i] = w
		}
	}
	return out
}

// abbreviated returns the only indexed word that t (three letters or more)
// is a shorter start of.
func (ix *lexicalIndex) abbreviated(t string) (string, bool) {
	if len(t) < 3 {
		return "", false
	}
	found := ""
	for i, _ := slices.BinarySearch(ix.vocab, t); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], t); i++ {
		if w := ix.vocab[i]; len(w) > len(t) && len(w) >= 4 {
			if found != "" {
				return "", false
			}
			found = w
		}
	}
	return found, found != ""
}

// closestWord returns the word of vocab within typo.MaxEdits of t that starts
// with the same letter (typos rarely change the first), the nearest first,
// then the most used (weight), then alphabetical.
func closestWord(t string, vocab []string, weight func(string) int) (string, bool) {
	limit := typo.MaxEdits(len(t))
	if limit == 0 {
		return "", false
	}
	best, bestD := "", limit+1
	for _, w := range vocab {
		if w[0] != t[0] || abs(len(w)-len(t)) > limit {
			continue
		}
		d := typo.Distance(t, w)
		if d < bestD || d == bestD && weight(w) > weight(best) {
			best, bestD = w, d
		}
	}
	return best, best != ""
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// negations start a phrase that says what a capability is NOT for.
var negations = map[string]bool{"not": true, "no": true, "never": true, "nor": true, "without": true}

// tokenizeAffirmative is tokenize for what a capability says about itself:
// words from a negation to the end of its clause are dropped, so "live
// values (not their history)" does not make the capability relevant to "its
// history".
func tokenizeAffirmative(s string) []string {
	aff, _ := splitNegated(s)
	return aff
}

// negatedWords are the words tokenizeAffirmative drops.
func negatedWords(s string) []string {
	_, neg := splitNegated(s)
	return neg
}

// splitNegated tokenizes s into the words it states and the words it
// negates: from a negation to the end of its clause (a period, semicolon,
// colon or parenthesis; commas do not end it, so "not its history, trend or
// average" negates all three).
func splitNegated(s string) (affirmative, negated []string) {
	for _, clause := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(".;:()[]", r) }) {
		words := strings.FieldsFunc(strings.ToLower(clause), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
		})
		cut := len(words)
		for i, w := range words {
			if negations[w] || strings.HasSuffix(w, "n't") {
				cut = i
				break
			}
		}
		affirmative = append(affirmative, tokenize(strings.Join(words[:cut], " "))...)
		if cut < len(words) {
			negated = append(negated, tokenize(strings.Join(words[cut+1:], " "))...)
		}
	}
	return affirmative, negated
}

func stem(w string) string {
	for _, suf := range []string{"ings", "ing", "ies", "ied", "es", "ed", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			base := w[:len(w)-len(suf)]
			switch suf {
			case "ies", "ied":
				return base + "y"
			case "es":
				// "values" → "valu" and "value" → "valu" must meet: strip only the "s".
				return stemE(w[:len(w)-1])
			}
			return stemE(base)
		}
	}
	return stemE(w)
}

// stemE drops a final "e" so "value"/"valued" and "write"/"writing" meet.
func stemE(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		return w[:len(w)-1]
	}
	return w
}
