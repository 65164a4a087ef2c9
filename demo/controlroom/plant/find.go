package plant

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/capgraph/capgraph/typo"
)

// DefaultMaxMatches caps the channels Find returns.
const DefaultMaxMatches = 20

// FindResult is what Find matched.
type FindResult struct {
	Query    string   `json:"query"`
	Channels []string `json:"channels"`
	// Truncated is true when more channels matched than were returned.
	Truncated bool `json:"truncated,omitempty"`
	// Corrected lists words of the query read as other words: typos and
	// abbreviations ("curent" → "current").
	Corrected []Correction `json:"corrected,omitempty"`
	// Ignored lists words of the query no channel has, left out because
	// the rest of the query picks out the channels.
	Ignored []string `json:"ignored,omitempty"`
}

// Correction is a query word read as another.
type Correction struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Find maps a natural-language query ("vacuum in sector 3", "RF cav 2
// volts", "SR:DCCT:CURRENT", "whats the beam curent") to channel names.
//
// Explicit channel names in the query are returned as they are. Otherwise
// the query's words are normalised (abbreviations and synonyms such as
// "vac", "temp", "cav", "kly", "volts", "S3" and "sec 3"; typos within a
// small edit distance) and a channel matches when it has every one of them:
// in its name, description, synonyms or units. Numbered devices ("sector 3",
// "cavity 2", "Q1") must match exactly. Among the matches, whole synonym
// phrases ("beam current") rank first. A word no channel has is left out
// (FindResult.Ignored) when the rest still picks out at most max channels.
//
// When nothing matches, Find returns a *NoMatch (errors.Is ErrNoMatch)
// that says what does not exist and what does: "There is no sector 42; the
// sectors are 1 to 12", or that no channel has "temperature" together with
// "klystron", with the channels of each.
func (p *Plant) Find(query string, max int) (FindResult, error) {
	if max <= 0 {
		max = DefaultMaxMatches
	}
	res := FindResult{Query: query}
	if explicit := p.explicitChannels(query); len(explicit) > 0 {
		res.Channels = explicit
		return res, nil
	}
	return p.index.find(query, max, p.kindNames)
}

// kinds names each kind of channel once: its first synonym ("beam
// current", "rf voltage"), in catalog order. New keeps it (kindNames):
// the catalog does not change.
func (p *Plant) kinds() []string {
	var out []string
	for _, n := range p.listed {
		if syn := p.channels[n].Synonyms; len(syn) > 0 && !slices.Contains(out, syn[0]) {
			out = append(out, syn[0])
		}
	}
	return out
}

// Quantities lists what the machine's channels measure, as operators name
// it: the channels' synonyms, each once, in catalog order.
func (p *Plant) Quantities() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range p.listed {
		for _, s := range p.channels[n].Synonyms {
			if k := strings.ToLower(s); !seen[k] {
				seen[k] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// Systems lists the machine's systems: the first part of the channel names
// ("SR", "LINAC"), each once, in catalog order.
func (p *Plant) Systems() []string {
	var out []string
	for _, n := range p.listed {
		if sys, _, _ := strings.Cut(n, ":"); !slices.Contains(out, sys) {
			out = append(out, sys)
		}
	}
	return out
}

var addressPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9_]*(?::[a-z0-9_]+)+\b`)

func (p *Plant) explicitChannels(q string) []string {
	if !strings.Contains(q, ":") {
		return nil // every address has one; most questions name none
	}
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

// Words that carry no meaning for finding a channel: grammar, requests,
// time, statistics and verbs of reading or changing. A word here never
// narrows a search and never makes it fail.
var fillers = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		a an the of in on at to for from by with and or nor but not no as if than then so too very via per vs versus
		is are was were be been being am do does did done doing has have had having will would shall should can could may might must
		i me my we us our you your it its they them their he she his her this that these those there here such
		what whats which who whos whom whose when where wheres why how hows whats
		isnt arent wasnt dont doesnt didnt cant im ive id lets
		please pls plz kindly thanks thank thx ty hi hello hey ok okay quick quickly asap just only also still again already
		ever even about around approximately roughly exactly some any all each every both other others one ones thing things
		whole entire overall
		show shows showing display list lists listing find search lookup look looks looking fetch pull grab get gets got getting give gimme
		tell know need want like read reads reading readings readback readbacks measure measures measured measuring measurement measurements
		monitor monitored report check checking see value values number numbers data info information
		stats statistics average avg mean min minimum max maximum std deviation rms peak spread range
		trend trends trending history historical archive archived logged log plot graph chart evolve evolved evolution
		behave behaved behaving going happening happened change changed changes changing set setting setpoint
		adjust increase decrease raise lower ramp bump put write make restore turn drop reduce go
		now right currently present presently actual actually live real realtime instant moment latest
		time times ago since until till last past previous recent recently earlier later before after
		yesterday today tonight morning afternoon evening night hour hours hr hrs minute minutes mins second seconds
		day days week weeks month shift daily hourly
		channel channels pv pvs signal signals address addresses name names process variable variables exist exists available
		machine accelerator facility system systems plant control device devices status state condition health
		fine normal nominal expected correct wrong good bad high low stable okay level levels
		ok healthy health problem problems issue issues alarm alarms warning warnings trouble within limits limit
		compare compared comparing comparison instead
		many much count counted total
		follow up back revert undo restored
		setze stelle stell setzen auf den dem wert stand von vom gestern gestrigen zurück zurueck
		remets remettre mets la le sa son valeur hier dhier veille à
		nudge push send update program configure mach mache fais faites passer passe faut il monter monte`) {
		fillers[w] = true
	}
}

// synonyms map the words operators use to one canonical term, so "vacuum",
// "vac" and "vaccum" (after typo correction) all find VAC channels.
var synonyms = map[string]string{
	"vacuum": "vac", "vacua": "vac",
	"voltage": "volt", "volts": "volt", "voltages": "volt",
	"temperature": "temp", "temperatures": "temp", "temps": "temp",
	"quadrupole": "quad", "quadrupoles": "quad", "quads": "quad",
	"cavity": "cav", "cavities": "cav", "cavs": "cav",
	"klystron": "kly", "klystrons": "kly",
	"frequency": "freq", "frequencies": "freq",
	"forward": "fwd", "reflected": "refl", "reflection": "refl", "reflect": "refl",
	"positions": "position", "pos": "position",
	"currents": "current", "curr": "current", "cur": "current",
	"pressures": "pressure", "magnets": "magnet", "mag": "magnet", "gauges": "gauge", "bpms": "bpm",
	"pumps": "pump", "powers": "power", "phases": "phase", "tunes": "tune", "energies": "energy",
	"x": "horizontal", "horiz": "horizontal", "hor": "horizontal", "y": "vertical", "vert": "vertical",
	"dipole": "bend", "dipoles": "bend", "bends": "bend",
	"lifetimes": "lifetime", "life": "lifetime",
	// German and French, the other languages operators ask in.
	"spannung": "volt", "tension": "volt", "strom": "current", "stroms": "current", "courant": "current",
	"quadrupol": "quad", "quadrupols": "quad", "quadrupôle": "quad",
	"kavität": "cav", "kavitaet": "cav", "cavité": "cav", "cavite": "cav",
	"vakuum": "vac", "vide": "vac", "druck": "pressure", "pression": "pressure",
	"temperatur": "temp", "température": "temp", "leistung": "power", "puissance": "power",
	"frequenz": "freq", "fréquence": "freq", "strahl": "beam", "faisceau": "beam",
	"lebensdauer": "lifetime", "durée": "lifetime",
}

// units are unit words: a channel in that unit ranks higher, and a unit no
// channel of the match has is ignored ("vacuum in mbar").
var units = map[string]string{
	"ma": "ma", "milliamp": "ma", "milliamps": "ma", "ua": "ua", "microamp": "ua", "microamps": "ua",
	"a": "a", "amp": "a", "amps": "a", "ampere": "a", "amperes": "a",
	"kv": "kv", "kilovolt": "kv", "kilovolts": "kv", "mv": "mv",
	"kw": "kw", "kilowatt": "kw", "kilowatts": "kw", "mw": "mw", "megawatt": "mw", "megawatts": "mw", "w": "w", "watt": "w", "watts": "w",
	"mhz": "mhz", "megahertz": "mhz", "hz": "hz", "ghz": "ghz",
	"torr": "torr", "mbar": "mbar", "pa": "pa", "pascal": "pa",
	"degc": "degc", "celsius": "degc", "c": "degc", "deg": "deg", "degree": "deg", "degrees": "deg",
	"mm": "mm", "um": "um", "micron": "um", "microns": "um",
	"nc": "nc", "pc": "pc", "mev": "mev", "gev": "gev", "kev": "kev", "ev": "ev", "h": "h",
}

// qualifiers followed by a number form one identifier: "sector 3", "sec 3",
// "cell 3" and "S3" are all "c3".
var qualifiers = map[string]string{
	"sector": "c", "sectors": "c", "sec": "c", "sect": "c", "cell": "c", "s": "c", "c": "c",
	"cav": "cav", "cavity": "cav", "kly": "kly", "klystron": "kly",
	"bpm": "bpm", "gauge": "gauge", "ig": "gauge",
	"quad": "q", "quadrupole": "q", "q": "q", "bend": "b", "dipole": "b", "b": "b",
	"kavität": "cav", "kavitaet": "cav", "cavité": "cav", "cavite": "cav", "quadrupol": "q", "quadrupôle": "q",
	"sektor": "c", "secteur": "c",
}

// idKinds name the numbered devices for messages: "c3" is "sector 3".
var idKinds = map[string]struct{ one, many, prefix string }{
	"c": {"sector", "sectors", ""}, "cav": {"RF cavity", "RF cavities", ""}, "kly": {"klystron", "klystrons", ""},
	"bpm": {"BPM", "BPMs", ""}, "gauge": {"ion gauge", "ion gauges", ""},
	"q": {"quadrupole", "quadrupoles", "Q"}, "b": {"bend", "bends", "B"},
}

// kindWords: a qualifier with its number also indexes the word alone, so
// "vacuum by sector" finds the sector gauges.
var kindWords = map[string]string{"c": "sector"}

// splitIdentifier splits "gauge1" into ("gauge", 1): lower-case ASCII
// letters, then digits, and nothing else. Written out rather than as a
// regular expression: every word of every query goes through it.
func splitIdentifier(t string) (prefix string, n int, ok bool) {
	i := 0
	for i < len(t) && 'a' <= t[i] && t[i] <= 'z' {
		i++
	}
	if i == 0 || i == len(t) {
		return "", 0, false
	}
	for j := i; j < len(t); j++ {
		if t[j] < '0' || '9' < t[j] {
			return "", 0, false
		}
	}
	n, _ = strconv.Atoi(t[i:])
	return t[:i], n, true
}

// isIdentifier: a term with a number in it ("q1", "c3", "cav2").
func isIdentifier(t string) bool {
	_, _, ok := splitIdentifier(t)
	return ok
}

// word is one normalised word of a text.
type word struct {
	term    string // canonical: "vac", "c3", "ma"
	surface string // as written, for messages: "vaccum", "sector 42"
	unit    bool
}

// splitWords lower-cases text and splits it into words (apostrophes
// dropped: "what's" → "whats").
func splitWords(text string) []string {
	text = apostrophes.Replace(strings.ToLower(text))
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// canonical maps a word to its term: synonyms, then a plural "s".
func canonical(w string) string {
	if c, ok := synonyms[w]; ok {
		return c
	}
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		s := strings.TrimSuffix(w, "s")
		if c, ok := synonyms[s]; ok {
			return c
		}
		return s
	}
	return w
}

// number reads "3" or "three".
func number(w string) (int, bool) {
	if n, err := strconv.Atoi(w); err == nil && n >= 0 {
		return n, true
	}
	if v, ok := wordNumbers[w]; ok && w != "a" && w != "an" {
		return int(v), true
	}
	return 0, false
}

// normalise turns a text into terms. fix, when set, is asked about every
// word that is none of a number, identifier, qualifier, unit, filler or
// known term (typo correction, before qualifiers join their numbers, so
// "klystorn 1" is klystron 1); it returns the word to use and whether it
// found one.
func normalise(text string, known func(string) bool, fix func(string) (string, bool)) (out []word, unknown []string, corrected []Correction) {
	var ws []string
	for _, w := range splitWords(text) {
		_, num := number(w)
		_, qual := qualifiers[w]
		_, unit := units[w]
		if fix == nil || num || qual || unit || fillers[w] || isIdentifier(w) || known(canonical(w)) {
			ws = append(ws, w)
			continue
		}
		f, ok := fix(w)
		switch {
		case !ok:
			unknown = append(unknown, w)
			continue
		case !fillers[f]:
			corrected = append(corrected, Correction{From: w, To: f})
		}
		ws = append(ws, f)
	}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if q, ok := qualifiers[w]; ok && i+1 < len(ws) {
			if n, ok := number(ws[i+1]); ok {
				out = append(out, word{term: q + strconv.Itoa(n), surface: idLabel(q, n)})
				i++
				continue
			}
		}
		if prefix, n, ok := splitIdentifier(w); ok {
			if q, ok := qualifiers[prefix]; ok {
				prefix = q
			}
			out = append(out, word{term: prefix + strconv.Itoa(n), surface: idLabel(prefix, n)})
			continue
		}
		if _, err := strconv.ParseFloat(w, 64); err == nil {
			continue // a value ("to 105"), not a name
		}
		if u, ok := units[w]; ok {
			out = append(out, word{term: u, surface: w, unit: true})
			continue
		}
		if t := canonical(w); !fillers[w] && len(t) >= 2 {
			out = append(out, word{term: t, surface: w})
		}
	}
	return out, unknown, corrected
}

// idLabel names an identifier for people: "sector 42", "quadrupole Q9".
func idLabel(prefix string, n int) string {
	if k, ok := idKinds[prefix]; ok {
		return fmt.Sprintf("%s %s%d", k.one, k.prefix, n)
	}
	return fmt.Sprintf("%s%d", strings.ToUpper(prefix), n)
}

// searchIndex is a small inverted index over the channels.
type searchIndex struct {
	names   []string
	terms   map[string]map[string]bool // channel → terms
	units   map[string]string          // channel → unit term
	phrases map[string][][]string      // channel → multi-word synonyms, as terms
	df      map[string]int
	// postings lists, per term, the channels having it as indexes into
	// names, ascending.
	postings map[string][]int
	// numbers holds, per identifier prefix ("c", "cav"), the numbers that
	// exist ("sectors 1 to 12").
	numbers map[string][]int
	// vocab is every word a query may use (terms, synonyms, qualifiers,
	// units, fillers), sorted, for typo correction.
	vocab []string
}

// apostrophes are dropped from a query ("what's" → "whats").
var apostrophes = strings.NewReplacer("'", "", "’", "")

// indexes keeps each channel table's index (read-only once built): every
// plant of a process with the same channels shares one, so a test that
// makes a plant per case does not build it again.
var indexes sync.Map // indexKey → *searchIndex

// indexKey is what an index is built from: the channels' names, words and
// units.
func indexKey(names []string, chans map[string]Channel) string {
	var b strings.Builder
	for _, n := range names {
		c := chans[n]
		b.WriteString(n + "\x00" + c.Description + "\x00" + strings.Join(c.Synonyms, "\x01") + "\x00" + c.Units + "\x02")
	}
	return b.String()
}

// searchIndexFor returns the index of a channel table, built once.
func searchIndexFor(names []string, chans map[string]Channel) *searchIndex {
	key := indexKey(names, chans)
	if ix, ok := indexes.Load(key); ok {
		return ix.(*searchIndex)
	}
	ix, _ := indexes.LoadOrStore(key, newSearchIndex(names, chans))
	return ix.(*searchIndex)
}

func newSearchIndex(names []string, chans map[string]Channel) *searchIndex {
	ix := &searchIndex{names: names, terms: map[string]map[string]bool{}, units: map[string]string{},
		phrases: map[string][][]string{}, df: map[string]int{}, postings: map[string][]int{}, numbers: map[string][]int{}}
	all := func(string) bool { return true }
	for i, n := range names {
		c := chans[n]
		set := map[string]bool{}
		text := strings.ReplaceAll(c.Name, ":", " ") + " " + c.Description + " " + strings.Join(c.Synonyms, " ")
		ws, _, _ := normalise(text, all, nil)
		for _, w := range ws {
			if w.unit {
				continue // "A" in a description is an article
			}
			set[w.term] = true
			if prefix, n, ok := splitIdentifier(w.term); ok {
				if !slices.Contains(ix.numbers[prefix], n) {
					ix.numbers[prefix] = append(ix.numbers[prefix], n)
				}
				// "gauge1" also answers to "gauge", "c3" to "sector".
				if len(prefix) >= 3 {
					set[prefix] = true
				}
				if kw, ok := kindWords[prefix]; ok {
					set[kw] = true
				}
			}
		}
		if u, ok := units[strings.ToLower(c.Units)]; ok {
			ix.units[n] = u
		}
		ix.terms[n] = set
		for t := range set {
			ix.df[t]++
			ix.postings[t] = append(ix.postings[t], i)
		}
		for _, s := range c.Synonyms {
			if ws, _, _ := normalise(s, all, nil); len(ws) > 1 {
				ix.phrases[n] = append(ix.phrases[n], phraseTerms(ws))
			}
		}
	}
	for _, ns := range ix.numbers {
		slices.Sort(ns)
	}
	seen := map[string]bool{}
	add := func(w string) {
		if len(w) >= 3 && !seen[w] && !isIdentifier(w) {
			seen[w] = true
			ix.vocab = append(ix.vocab, w)
		}
	}
	for t := range ix.df {
		add(t)
	}
	for _, m := range []map[string]string{synonyms, qualifiers, units} {
		for w := range m {
			add(w)
		}
	}
	for w := range fillers {
		add(w)
	}
	for _, n := range names {
		for _, w := range splitWords(chans[n].Description + " " + strings.Join(chans[n].Synonyms, " ")) {
			add(w)
		}
	}
	sort.Strings(ix.vocab)
	return ix
}

// phraseTerms are a phrase's terms, identifiers reduced to their kind
// ("cav2" → "cav"), so "RF cav 2 volts" contains "rf cavity voltage".
func phraseTerms(ws []word) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		if w.unit {
			continue
		}
		t := w.term
		if prefix, _, ok := splitIdentifier(t); ok {
			t = prefix
		}
		out = append(out, t)
	}
	return out
}

// known: a term some channel has.
func (ix *searchIndex) known(t string) bool { return ix.df[t] > 0 }

// fix reads an unknown word as the vocabulary word it abbreviates (the only
// one it starts, three letters or more: "lifet", "circ") or misspells
// (within typo.MaxEdits, same first letter: "curent", "vaccum",
// "klystorn").
func (ix *searchIndex) fix(w string) (string, bool) {
	if len(w) >= 3 {
		found := ""
		for i, _ := slices.BinarySearch(ix.vocab, w); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], w); i++ {
			if v := ix.vocab[i]; v != w && !fillers[v] && ix.known(canonical(v)) {
				if found != "" && canonical(found) != canonical(v) {
					found = ""
					break
				}
				if found == "" {
					found = v
				}
			}
		}
		if found != "" {
			return found, true
		}
	}
	limit := typo.MaxEdits(len(w))
	if limit == 0 {
		return "", false
	}
	best, bestD, bestDF := "", limit+1, -1
	for _, v := range ix.vocab {
		if v[0] != w[0] || absInt(len(v)-len(w)) > limit {
			continue
		}
		d := typo.Distance(w, v)
		df := ix.df[canonical(v)]
		if d < bestD || d == bestD && df > bestDF {
			best, bestD, bestDF = v, d, df
		}
	}
	return best, best != ""
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// phraseBonus rewards a whole synonym phrase found in the query.
const phraseBonus = 3.0

// unitBonus rewards a channel in the unit the query names.
const unitBonus = 1.0

// keepRatio: matches scoring below this fraction of the best are dropped.
const keepRatio = 0.75

// maxListed caps the channels a "nothing matches" message names per group.
const maxListed = 8

type match struct {
	channel string
	score   float64
}

// concept is one thing a query asks for: a term with the words that said it.
type concept struct {
	term, label string
}

// find searches the index; quantities are named when the query names none.
func (ix *searchIndex) find(query string, max int, quantities []string) (FindResult, error) {
	res := FindResult{Query: query}
	ws, unknown, corrected := normalise(StripTimeRange(query), ix.known, ix.fix)
	res.Corrected = corrected
	var ids, content []concept
	var unitTerms, seq []string
	seen := map[string]bool{}
	for _, w := range ws {
		if w.unit {
			unitTerms = append(unitTerms, w.term)
			continue
		}
		seq = append(seq, phraseTerms([]word{w})...)
		if seen[w.term] {
			continue
		}
		seen[w.term] = true
		c := concept{term: w.term, label: w.surface}
		if isIdentifier(w.term) {
			ids = append(ids, c)
		} else {
			content = append(content, c)
		}
	}
	nm := &NoMatch{Query: query, Unknown: unknown}
	if len(ids)+len(content) == 0 {
		if len(unknown) == 0 {
			nm.Empty = true
		}
		nm.Known = slices.Clone(quantities) // the plant's own list stays as it is
		return res, nm
	}
	// A numbered device the machine does not have.
	for _, id := range ids {
		if ix.known(id.term) {
			continue
		}
		prefix, _, _ := splitIdentifier(id.term)
		a := Absence{What: id.label}
		if ns := ix.numbers[prefix]; len(ns) > 0 {
			a.Exists = idRange(prefix, ns)
		}
		nm.Absent = append(nm.Absent, a)
	}
	if len(nm.Absent) > 0 {
		var rest []concept
		for _, id := range ids {
			if ix.known(id.term) {
				rest = append(rest, id)
			}
		}
		rest = append(rest, content...)
		if len(rest) > 0 {
			nm.Nearby = append(nm.Nearby, ix.group(rest))
		}
		return res, nm
	}
	all := append(slices.Clone(ids), content...)
	full := ix.covering(all)
	if len(full) == 0 {
		nm.Missing, nm.With = ix.closest(ids, content)
		var with []concept
		for _, c := range all {
			if slices.Contains(nm.With, c.label) {
				with = append(with, c)
			}
		}
		if len(with) > 0 {
			nm.Nearby = append(nm.Nearby, ix.group(with))
		}
		for _, c := range all {
			if slices.Contains(nm.Missing, c.label) {
				if g := ix.group([]concept{c}); g.Total > 0 {
					nm.Nearby = append(nm.Nearby, g)
				}
			}
		}
		return res, nm
	}
	ms := ix.rank(full, all, seq, unitTerms)
	truncated := len(ms) > max
	if len(unknown) > 0 && (truncated || len(content) == 0) {
		// The rest is too vague to stand for the request without the
		// unknown word.
		nm.Nearby = append(nm.Nearby, ix.group(all))
		return res, nm
	}
	res.Ignored = unknown
	if truncated {
		ms, res.Truncated = ms[:max], true
	}
	for _, m := range ms {
		res.Channels = append(res.Channels, m.channel)
	}
	return res, nil
}

// covering returns the channels (in name order) that have every concept.
func (ix *searchIndex) covering(cs []concept) []string {
	if len(cs) == 0 {
		return slices.Clone(ix.names)
	}
	// The concepts' postings intersected, rarest first: a scan of every
	// channel was a twentieth of a served turn's CPU, and a lookup of every
	// concept in each candidate's terms still a thirtieth of a demo turn's.
	lists := make([][]int, len(cs))
	for i, c := range cs {
		lists[i] = ix.postings[c.term]
	}
	slices.SortFunc(lists, func(a, b []int) int { return cmp.Compare(len(a), len(b)) })
	found := slices.Clone(lists[0])
	for _, l := range lists[1:] {
		found = intersectSorted(found, l)
	}
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = ix.names[n]
	}
	return out
}

// intersectSorted keeps, in place, the elements of a (ascending) that b
// (ascending) has.
func intersectSorted(a, b []int) []int {
	out, j := a[:0], 0
	search := len(b) > 4*len(a) // a few candidates in a long list: seek, not walk
	for _, x := range a {
		if search {
			k, _ := slices.BinarySearch(b[j:], x)
			j += k
		} else {
			for j < len(b) && b[j] < x {
				j++
			}
		}
		if j == len(b) {
			break
		}
		if b[j] == x {
			out = append(out, x)
		}
	}
	return out
}

// rank scores full matches: the concepts' rarity, a bonus per synonym
// phrase the query contains and for the unit it names; it keeps those
// within keepRatio of the best, best first.
func (ix *searchIndex) rank(full []string, cs []concept, seq, unitTerms []string) []match {
	n := float64(len(ix.names))
	base := 0.0
	for _, c := range cs {
		base += math.Log(1 + n/float64(ix.df[c.term]))
	}
	best := 0.0
	ms := make([]match, 0, len(full))
	for _, name := range full {
		score := base
		for _, ph := range ix.phrases[name] {
			if containsRun(seq, ph) {
				score += phraseBonus
			}
		}
		if u := ix.units[name]; u != "" && slices.Contains(unitTerms, u) {
			score += unitBonus
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
	return out
}

// containsRun reports whether sub appears in s as consecutive terms.
func containsRun(s, sub []string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// closest finds the largest part of the request some channel matches (by
// rarity of its concepts) and returns the labels it leaves out and the
// labels it keeps.
func (ix *searchIndex) closest(ids, content []concept) (missing, with []string) {
	all := append(slices.Clone(ids), content...)
	n := float64(len(ix.names))
	weight := func(c concept) float64 { return math.Log(1 + n/float64(max(ix.df[c.term], 1))) }
	bestW := -1.0
	var best []bool
	for _, name := range ix.names {
		set := ix.terms[name]
		has := make([]bool, len(all))
		w := 0.0
		for i, c := range all {
			if set[c.term] {
				has[i] = true
				w += weight(c)
			}
		}
		if w > bestW {
			bestW, best = w, has
		}
	}
	for i, c := range all {
		if best != nil && best[i] {
			with = append(with, c.label)
		} else {
			missing = append(missing, c.label)
		}
	}
	return missing, with
}

// group lists the channels that have every concept of cs.
func (ix *searchIndex) group(cs []concept) ChannelGroup {
	labels := make([]string, len(cs))
	for i, c := range cs {
		labels[i] = c.label
	}
	chans := ix.covering(cs)
	g := ChannelGroup{For: strings.Join(labels, " "), Total: len(chans)}
	g.Channels = chans[:min(len(chans), maxListed)]
	return g
}

// idRange says which numbers of a kind exist: "sectors 1 to 12",
// "ion gauges 1 and 2", "quadrupoles Q1 to Q6".
func idRange(prefix string, ns []int) string {
	k, ok := idKinds[prefix]
	if !ok {
		k.many, k.prefix = strings.ToUpper(prefix), strings.ToUpper(prefix)
	}
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, fmt.Sprintf("%s%d to %s%d", k.prefix, ns[i], k.prefix, ns[j]))
		case j == i+1:
			parts = append(parts, fmt.Sprintf("%s%d", k.prefix, ns[i]), fmt.Sprintf("%s%d", k.prefix, ns[j]))
		default:
			parts = append(parts, fmt.Sprintf("%s%d", k.prefix, ns[i]))
		}
		i = j + 1
	}
	return k.many + " " + joinAnd(parts)
}

// joinAnd joins "a", "b", "c" as "a, b and c".
func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
