package nodes

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/capgraph/capgraph/capabilities"
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
}

// exampleWeight discounts words that come from example queries: their nouns
// ("vacuum in sector 3") are incidental, the description and instructions
// say what the capability is for.
const exampleWeight = 0.3

// vetoSimilarity is how close (Jaccard) a task must be to a negative example
// for it to veto the capability.
const vetoSimilarity = 0.5

// Score is one capability's lexical relevance.
type Score struct {
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
		total += n
	}
	if len(ix.tf) > 0 {
		ix.avgLen = total / float64(len(ix.tf))
	}
	return ix
}

// scores returns every capability's score for the task, best first. A
// capability whose nearest example is a negative one at least
// vetoSimilarity close scores 0: its guide says "not for this".
func (ix *lexicalIndex) scores(task string) []Score {
	q := tokenize(task)
	slices.Sort(q)
	q = slices.Compact(q)
	n := float64(len(ix.tf))
	out := make([]Score, len(ix.tf))
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
		if !strong {
			s = 0 // only common words matched: "current time", "thanks, that's all for now"
		}
		out[i] = Score{Capability: ix.names[i], Score: s, Core: core && s > 0}
	}
	slices.SortStableFunc(out, func(a, b Score) int {
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
// (two capabilities both about "beam current") almost no weight.
func (ix *lexicalIndex) selectLexical(task string, threshold, relative float64) []string {
	sc := ix.scores(task)
	if len(sc) == 0 || sc[0].Score <= 0 {
		return nil
	}
	var out []string
	for _, s := range sc {
		if s.Score > 0 && s.Score >= relative*sc[0].Score && (s.Core || s.Score >= threshold) {
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
	when where which who will with would you your our any all some about also just let lets need want`) {
		stopwords[w] = true
	}
	for _, w := range strings.Fields(`now current currently today time status state thank thanks hello hi hey good great
	fine ok okay yes no right new old thing things something anything everything value values help know like see look
	much many more less here well really very still again one way last next bye goodbye`) {
		weakWords[stem(w)] = true
	}
}

// tokenize lower-cases, splits on non-alphanumerics (also "_" and "-"),
// drops stop words and strips common English suffixes so "reading",
// "reads" and "read" meet.
func tokenize(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if stopwords[f] || len(f) < 2 {
			continue
		}
		out = append(out, stem(f))
	}
	return out
}

// negations start a phrase that says what a capability is NOT for.
var negations = map[string]bool{"not": true, "no": true, "never": true, "nor": true, "without": true}

// tokenizeAffirmative is tokenize for what a capability says about itself:
// words from a negation to the end of its phrase (a comma, period,
// semicolon, colon or parenthesis) are dropped, so "live values (not their
// history)" does not make the capability relevant to "its history".
func tokenizeAffirmative(s string) []string {
	var out []string
	for _, phrase := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(",.;:()[]", r) }) {
		words := strings.FieldsFunc(strings.ToLower(phrase), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
		})
		kept := make([]string, 0, len(words))
		for _, w := range words {
			if negations[w] || strings.HasSuffix(w, "n't") {
				break
			}
			kept = append(kept, w)
		}
		out = append(out, tokenize(strings.Join(kept, " "))...)
	}
	return out
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
