package plant

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// DefaultMaxMatches caps the channels Find returns.
const DefaultMaxMatches = 20

// FindResult is what Find matched.
type FindResult struct {
	Query    string   `json:"query"`
	Channels []string `json:"channels"`
	// Truncated is true when more channels matched than were returned.
	Truncated bool `json:"truncated,omitempty"`
}

// Find maps a natural-language query ("vacuum in sector 3", "RF cavity
// voltage", "SR:DCCT:CURRENT") to channel names. Explicit channel names in
// the query are returned as they are. Otherwise channels are ranked by the
// query words they share with their name, description and synonyms
// (weighted by rarity), with a bonus for a whole synonym phrase ("beam
// current"); identifiers with a number ("Q1", "sector 3", "cavity 2") must
// match. It returns ErrNoMatch when nothing fits.
func (p *Plant) Find(query string, max int) (FindResult, error) {
	if max <= 0 {
		max = DefaultMaxMatches
	}
	res := FindResult{Query: query}
	if explicit := p.explicitChannels(query); len(explicit) > 0 {
		res.Channels = explicit
		return res, nil
	}
	matches, required := p.index.search(StripTimeRange(query))
	if len(matches) == 0 {
		if len(required) > 0 {
			return res, fmt.Errorf("%w for %q (no channel has %s)", ErrNoMatch, query, strings.Join(required, ", "))
		}
		return res, fmt.Errorf("%w for %q", ErrNoMatch, query)
	}
	if len(matches) > max {
		matches, res.Truncated = matches[:max], true
	}
	for _, m := range matches {
		res.Channels = append(res.Channels, m.channel)
	}
	return res, nil
}

var addressPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9_]*(?::[a-z0-9_]+)+\b`)

func (p *Plant) explicitChannels(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range addressPattern.FindAllString(q, -1) {
		name := strings.ToUpper(m)
		if _, ok := p.channels[name]; ok && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// searchIndex is a small inverted index over the channels.
type searchIndex struct {
	names   []string
	terms   map[string]map[string]bool // channel → terms
	phrases map[string][]string        // channel → multi-word synonyms
	df      map[string]int
}

// Words that carry no meaning for finding a channel.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the of in on at to for from by with and or is are was be what what's whats
		how much many me show tell give get read set put change value values please now right currently
		current's there it its this that which all any some do does can could would should i we you my our
		level reading readings status check look see display plot trend history over during latest`) {
		stopwords[w] = true
	}
}

// canonical spellings, so "vacuum" matches VAC and "cavity" matches CAV.
var canon = map[string]string{
	"vacuum": "vac", "voltage": "volt", "volts": "volt", "temperature": "temp", "temperatures": "temp",
	"quadrupole": "quad", "quadrupoles": "quad", "cavity": "cav", "cavities": "cav", "klystron": "kly",
	"klystrons": "kly", "positions": "position", "currents": "current", "pressures": "pressure",
	"magnets": "magnet", "gauges": "gauge", "bpms": "bpm", "pumps": "pump", "powers": "power",
	"ring": "ring", "storage": "storage", "phases": "phase",
}

// qualifiers followed by a number form one identifier: "sector 3" → c3.
var qualifiers = map[string]string{
	"sector": "c", "sec": "c", "cav": "cav", "gauge": "gauge", "bpm": "bpm", "kly": "kly",
	"quad": "q", "q": "q", "bend": "b", "dipole": "b",
}

// identifier splits "gauge1" into ("gauge", 1).
var identifier = regexp.MustCompile(`^([a-z]+)0*([0-9]+)$`)

// tokens returns the canonical terms of a text.
func tokens(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	var out []string
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], "'")
		if c, ok := canon[w]; ok {
			w = c
		}
		if q, ok := qualifiers[w]; ok && i+1 < len(words) {
			if n, err := strconv.Atoi(words[i+1]); err == nil && n >= 0 {
				out = append(out, q+strconv.Itoa(n))
				i++
				continue
			}
		}
		if m := identifier.FindStringSubmatch(w); m != nil {
			n, _ := strconv.Atoi(m[2])
			out = append(out, m[1]+strconv.Itoa(n))
			continue
		}
		if stopwords[w] || len(w) < 2 || isNumber(w) {
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = strings.TrimSuffix(w, "s")
		}
		out = append(out, w)
	}
	return out
}

func isNumber(w string) bool {
	_, err := strconv.ParseFloat(w, 64)
	return err == nil
}

// isIdentifier: a term with a number in it ("q1", "c3", "cav2").
func isIdentifier(t string) bool { return identifier.MatchString(t) }

func phraseText(s string) string {
	return " " + strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ") + " "
}

func newSearchIndex(names []string, chans map[string]Channel) *searchIndex {
	ix := &searchIndex{names: names, terms: map[string]map[string]bool{}, phrases: map[string][]string{}, df: map[string]int{}}
	for _, n := range names {
		c := chans[n]
		set := map[string]bool{}
		text := strings.ReplaceAll(c.Name, ":", " ") + " " + c.Description + " " + strings.Join(c.Synonyms, " ")
		for _, t := range tokens(text) {
			set[t] = true
			// "gauge1" also answers to "gauge".
			if m := identifier.FindStringSubmatch(t); m != nil && len(m[1]) >= 3 {
				set[m[1]] = true
			}
		}
		ix.terms[n] = set
		for t := range set {
			ix.df[t]++
		}
		for _, s := range c.Synonyms {
			if strings.Contains(strings.TrimSpace(s), " ") {
				ix.phrases[n] = append(ix.phrases[n], phraseText(s))
			}
		}
	}
	return ix
}

type match struct {
	channel string
	score   float64
}

// phraseBonus rewards a whole synonym phrase found in the query.
const phraseBonus = 3.0

// keepRatio: channels scoring below this fraction of the best are dropped.
const keepRatio = 0.75

// search ranks channels for a query. required lists the query's
// identifiers (which every match must have).
func (ix *searchIndex) search(query string) (ms []match, required []string) {
	qt := tokens(query)
	qp := phraseText(query)
	n := float64(len(ix.names))
	seen := map[string]bool{}
	var terms []string
	for _, t := range qt {
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
			if isIdentifier(t) {
				required = append(required, t)
			}
		}
	}
	best := 0.0
	for _, name := range ix.names {
		set := ix.terms[name]
		ok := true
		for _, r := range required {
			if !set[r] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		score := 0.0
		for _, t := range terms {
			if set[t] {
				score += math.Log(1 + n/float64(ix.df[t]))
			}
		}
		if score == 0 {
			continue
		}
		for _, ph := range ix.phrases[name] {
			if strings.Contains(qp, ph) {
				score += phraseBonus
			}
		}
		best = math.Max(best, score)
		ms = append(ms, match{name, score})
	}
	out := ms[:0]
	for _, m := range ms {
		if m.score >= keepRatio*best {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].channel < out[j].channel
	})
	return out, required
}
