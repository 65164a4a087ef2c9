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
	names  []string
	docs   [][]string
	df     map[string]int
	avgLen float64
}

// Score is one capability's lexical relevance.
type Score struct {
	Capability string
	Score      float64
}

func newLexicalIndex(caps []capabilities.Capability) *lexicalIndex {
	ix := &lexicalIndex{df: map[string]int{}}
	total := 0
	for _, c := range caps {
		if isTerminal(c.Name()) {
			continue
		}
		text := strings.ReplaceAll(c.Name(), "_", " ") + " " + c.Description()
		if gp, ok := c.(capabilities.ClassifierGuideProvider); ok {
			if g := gp.ClassifierGuide(); g != nil {
				text += " " + g.Instructions
				for _, ex := range g.Examples {
					if ex.Result {
						text += " " + ex.Query
					}
				}
			}
		}
		toks := tokenize(text)
		ix.names = append(ix.names, c.Name())
		ix.docs = append(ix.docs, toks)
		total += len(toks)
		seen := map[string]bool{}
		for _, t := range toks {
			if !seen[t] {
				seen[t] = true
				ix.df[t]++
			}
		}
	}
	if len(ix.docs) > 0 {
		ix.avgLen = float64(total) / float64(len(ix.docs))
	}
	return ix
}

// scores returns every capability's score for the task, best first.
func (ix *lexicalIndex) scores(task string) []Score {
	q := tokenize(task)
	slices.Sort(q)
	q = slices.Compact(q)
	n := float64(len(ix.docs))
	out := make([]Score, len(ix.docs))
	for i, doc := range ix.docs {
		tf := map[string]int{}
		for _, t := range doc {
			tf[t]++
		}
		s := 0.0
		for _, t := range q {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(len(doc))/ix.avgLen))
		}
		out[i] = Score{Capability: ix.names[i], Score: s}
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

// selectLexical picks capabilities scoring at least threshold and at least
// relative × the best score.
func (ix *lexicalIndex) selectLexical(task string, threshold, relative float64) []string {
	sc := ix.scores(task)
	if len(sc) == 0 || sc[0].Score < threshold {
		return nil
	}
	var out []string
	for _, s := range sc {
		if s.Score >= threshold && s.Score >= relative*sc[0].Score {
			out = append(out, s.Capability)
		}
	}
	return out
}

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can could do does for from get give has have how i in
	into is it its me my of on or please show tell that the their them then there these this to us was we what
	when where which who will with would you your our any all some about also just let lets need want`) {
		stopwords[w] = true
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
