package intent

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// A property is a quantity of a device other than its setting: an alarm
// or trip limit, an offset, a rate, a gain, a delay. Its unit is often the
// setting's (a limit of Q1's current is in amperes too), so neither the
// device's name nor the unit tells "set the Q1 alarm limit to 105 A" from
// a write of Q1's setpoint: the user's words and the target's name must
// agree on the property.
type property struct {
	name string // in messages: "an alarm or trip limit"
	// words name it in the user's words (English, German, French), whole;
	// parts name it inside a longer word ("Alarmgrenzwert", "Stromlimit").
	words map[string]bool
	parts []string
	// tokens name it in a target's name ("…:HIHI", "…_OFFSET"); weak
	// ones (HIGH, MAX) may be part of a name that is no such property, so
	// a target carrying only them is not taken to name it.
	tokens, weak map[string]bool
}

var properties = []property{
	{
		name:   "an alarm or trip limit",
		words:  wordSet(`alarm alarms alert warning limit limits threshold thresholds trip interlock interlocks max maximum maximal min minimum minimal ceiling hihi lolo hilim lolim grenze grenzwert schwelle höchstwert mindestwert maximalwert minimalwert verriegelung abschaltung warnung alarme alarmes limite limites seuil seuils plafond maximale minimale déclenchement verrouillage alerte`),
		parts:  []string{"alarm", "grenz", "schwell", "limit", "threshold", "seuil", "warn"},
		tokens: wordSet(`alarm alm alrm limit limits lim hilim lolim thresh threshold thld trip ilk intlk interlock hihi lolo hopr lopr drvh drvl hsv lsv hhsv llsv`),
		weak:   wordSet(`high low hi lo max min upper lower warn`),
	},
	{
		name:   "an offset",
		words:  wordSet(`offset offsets bias versatz nullpunkt décalage`),
		parts:  []string{"offset", "versatz", "nullpunkt"},
		tokens: wordSet(`offset ofs ofst bias`),
	},
	{
		name:   "a rate",
		words:  wordSet(`rate rates slew ramprate rampenrate anstiegsrate vitesse taux`),
		parts:  []string{"geschwindigkeit"},
		tokens: wordSet(`rate slew ramprate rrate`),
	},
	{
		name:   "a gain",
		words:  wordSet(`gain gains verstärkung`),
		parts:  []string{"verstärkung"},
		tokens: wordSet(`gain`),
	},
	{
		name:   "a stored reference value (nominal, default, saved, calibration)",
		words:  wordSet(`nominal nominals default defaults golden saved reference references calibration calibrations nominalwert referenzwert referenz standardwert vorgabewert kalibrierung nominale référence défaut étalonnage calibrage`),
		parts:  []string{"nominalwert", "referenzwert", "standardwert", "kalibrier"},
		tokens: wordSet(`nom dflt golden saved calib`),
		// Words a description may use about a live setting ("nominal 100 A").
		weak: wordSet(`nominal ref reference default cal calibration`),
	},
	{
		name:   "a delay",
		words:  wordSet(`delay delays verzögerung retard délai`),
		parts:  []string{"delay", "verzögerung"},
		tokens: wordSet(`delay dly`),
	},
}

// said reports whether the user's words (a stated target) name p.
func (p property) said(ws []string) bool {
	for _, w := range ws {
		if p.words[w] {
			return true
		}
		for _, part := range p.parts {
			// A longer word holding the part ("Alarmgrenze", "Stromlimit"),
			// not an English form that says something else ("alarmed").
			if len(w) > len(part) && strings.Contains(w, part) && !strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "ing") {
				return true
			}
		}
	}
	return false
}

// named reports whether a target's name tokens name p: strongly (a token
// that names nothing else, or a weak one as a record's field, ".HIGH") or
// at all (a weak token as well).
func (p property) named(tokens []string) (strong, any bool) {
	for _, t := range tokens {
		field := strings.HasPrefix(t, ".")
		t = strings.TrimPrefix(t, ".")
		if p.tokens[t] || p.weak[t] && field {
			return true, true
		}
		if p.weak[t] {
			any = true
		}
	}
	return false, any
}

// nameTokens splits a target's name into lower-case tokens at everything
// but letters and digits and at a lower-to-upper case change
// ("Q1:CurrentLimit" → q1, current, limit). A token after a dot keeps it:
// an EPICS record's field ("Q1:CURRENT.HIGH" → q1, current, .high), which
// is the record's metadata, not its value.
func nameTokens(name string) []string {
	var out []string
	var b strings.Builder
	var prev rune
	flush := func() {
		if b.Len() > 0 && b.String() != "." {
			out = append(out, strings.ToLower(b.String()))
		}
		b.Reset()
	}
	for _, r := range name {
		switch {
		case r == '.':
			flush()
			b.WriteRune(r)
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	flush()
	return out
}

// wordsDisagree returns why the target an action executes on (its name
// and the application's description of it) is another thing than the
// target the user stated, though it carries the user's names, or "" when
// their words agree: the user named a property the target does not carry
// ("the Q1 alarm limit" and BTS:MAG:Q1:CURRENT), the target names one the
// user did not ("Q1" and BTS:MAG:Q1:CURRENT.HIHI), or the target is named
// by the opposite of a word the user names it by ("the focusing
// quadrupole" and one described as "defocusing …": opposites).
func wordsDisagree(stated, target, description string) string {
	ws, ts := words(stated), append(nameTokens(target), words(description)...)
	for _, p := range properties {
		said := p.said(ws)
		strong, any := p.named(ts)
		switch {
		case said && !any:
			return "which does not name " + p.name
		case strong && !said:
			return "which names " + p.name
		}
	}
	if f := unsaidField(ws, target); f != "" {
		return "which is " + f + ", not the setting"
	}
	if w := oppositeNamed(ws, ts); w != "" {
		return "which is named " + strconv.Quote(w)
	}
	if a := acronymMissing(stated, target, ts, description); a != "" {
		return "which is not named " + strconv.Quote(a)
	}
	if c := classMissing(stated, ws, ts, description); c != "" {
		return "which is not named " + strconv.Quote(c)
	}
	return ""
}

// deviceClasses are the kinds of device and the parts of a machine, each
// by all its words (abbreviations, plurals, German, French).
var deviceClasses = []map[string]bool{
	wordSet(`gun guns kanone elektronenkanone canon`),
	wordSet(`klystron klystrons kly klystrone`),
	wordSet(`cavity cavities cav kavität kavitäten resonator cavité cavités`),
	wordSet(`quadrupole quadrupoles quad quads quadrupol quadrupolen quadrupôle quadrupôles`),
	wordSet(`dipole dipoles bend bends bending dipol dipolen dipôle dipôles`),
	wordSet(`sextupole sextupoles sext sextupol sextupolen sextupôle sextupôles`),
	wordSet(`corrector correctors steerer steerers korrektor korrektoren correcteur correcteurs`),
	wordSet(`kicker kickers`),
	wordSet(`septum septa`),
	wordSet(`booster`),
	wordSet(`linac linacs linearbeschleuniger`),
	wordSet(`storage speicherring stockage`),
	wordSet(`transfer transport transferline transferlinie`),
	wordSet(`water wasser eau`),
	wordSet(`air luft`),
	wordSet(`bpm bpms`),
	wordSet(`gauge gauges jauge jauges`),
	wordSet(`pump pumps pumpe pumpen pompe pompes`),
	wordSet(`undulator undulators undulateur undulateurs wiggler wigglers`),
	wordSet(`solenoid solenoids solenoïde solenoïdes`),
}

// quantities are what a target measures or sets, each by all its words.
var quantities = []map[string]bool{
	wordSet(`voltage voltages volt volts hv spannung spannungen hochspannung tension tensions`),
	wordSet(`current currents curr strom ströme courant courants intensité`),
	wordSet(`tune tunes arbeitspunkt`),
	wordSet(`phase phases phasen`),
	wordSet(`frequency frequencies freq frequenz fréquence`),
	wordSet(`energy energies energie énergie`),
	wordSet(`power leistung puissance`),
	wordSet(`temperature temperatures temp temperatur température`),
	wordSet(`pressure vacuum druck vakuum pression vide`),
	wordSet(`lifetime lebensdauer`),
	wordSet(`charge ladung`),
}

// classMissing returns the user's word for a quantity (quantities), or,
// when the user's target states no numbered name, a kind of device
// (deviceClasses), that a described target (its name's tokens, its
// description's words) is not: "the horizontal tune" is not a cavity's
// voltage, "the gun voltage" not the klystron's high voltage, "the
// booster RF voltage" not a storage ring cavity's. A target the user
// numbers ("Q1") is compared by its kind only when its description names
// one: its number may be its sector's ("the tunnel air temperature in
// sector 1" is not the magnet cooling water's), and a description that
// names no kind ("Q1 magnet current") says nothing against the user's.
// An undescribed target has no words to compare.
func classMissing(stated string, said, has []string, description string) string {
	if strings.TrimSpace(description) == "" {
		return ""
	}
	var hasAll []string
	for _, t := range has {
		hasAll = append(hasAll, t)
		if letters, _, ok := splitGlued(t); ok {
			hasAll = append(hasAll, letters) // "kly1": kly
		}
	}
	classes := quantities
	if len(statedIdentifiers(stated)) == 0 || slices.ContainsFunc(deviceClasses, func(class map[string]bool) bool {
		return slices.ContainsFunc(hasAll, func(w string) bool { return class[w] })
	}) {
		classes = append(slices.Clone(quantities), deviceClasses...)
	}
	for _, class := range classes {
		i := slices.IndexFunc(said, func(w string) bool { return class[w] })
		if i >= 0 && !slices.ContainsFunc(hasAll, func(w string) bool { return class[w] }) {
			return said[i]
		}
	}
	return ""
}

// unsaidField describes a part of a target's name the user's words do not
// name that makes it another thing than a setting: a record's field other
// than its value ("….SCAN", "….DISA", "….PROC", "….DESC": an EPICS
// field, up to four capitals after a dot ending a name with a colon) or a
// readback ("…:RB", "…_RBV"); "" when there is none. Writing it would
// change how the record works or what it reports.
func unsaidField(ws []string, target string) string {
	if m := recordField.FindStringSubmatch(target); m != nil && m[1] != "VAL" && !slices.Contains(ws, strings.ToLower(m[1])) &&
		!slices.ContainsFunc(properties, func(p property) bool {
			_, any := p.named([]string{"." + strings.ToLower(m[1])})
			return any && p.said(ws) // "the Q1 alarm limit" is ….HIHI
		}) {
		return "its record's field ." + m[1]
	}
	if slices.ContainsFunc(ws, func(w string) bool { return readbackTokens[w] }) {
		return ""
	}
	toks := nameTokens(target)
	for i, t := range toks {
		if readbackTokens[t] || t == "read" && i+1 < len(toks) && toks[i+1] == "back" { // "…:ReadBack"
			return "a readback"
		}
	}
	return ""
}

// recordField is an EPICS record's field ending a channel's name.
var recordField = regexp.MustCompile(`^[^.]*:[^.]*\.([A-Z][A-Z0-9]{0,3})$`)

// readbackTokens name a readback in a target's name or the user's words.
var readbackTokens = wordSet(`rb rbv readback rdbk readbacks`)

// acronymMissing is an acronym the user names the target by ("the BTS
// Q1", "the SR RF") that neither the target's name nor its description
// carries — as a name's part (BTS:…, BPM3 for BPM), a word, or the initials
// of its words (HV for "high voltage") — or "". Against a description (an
// application's catalog says what a target is), or a name that says its
// area in letters first ("SR:MAG:Q1:CURRENT"; a terse name may say an
// area by a number, "A2:MAG:Q1"); only in a message that is not written
// in capitals (unless the target is one word), and never for a generic one
// (acronymGeneric: "the PS of Q1"). A code typed with a letter for a digit
// ("QI", "Ql", "QO" for Q1 and Q0) is such a word: the device it resembles
// is a guess.
func acronymMissing(stated, target string, targetWords []string, description string) string {
	single := len(strings.Fields(stated)) == 1 // "QI": a name, even in a message in capitals
	if strings.TrimSpace(description) == "" && !areaFirst(target) || !single && !strings.ContainsFunc(stated, unicode.IsLower) {
		return ""
	}
	desc := words(description)
	for _, w := range strings.FieldsFunc(stated, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		code := strings.TrimSuffix(w, "l") // "Ql", "HCMl": capitals with an l where a 1 would be
		if len(w) < 2 || len(w) > 6 || code == "" || strings.ContainsFunc(code, func(r rune) bool { return r < 'A' || r > 'Z' }) || KnownUnit(w) {
			continue
		}
		a := strings.ToLower(w)
		if acronymGeneric[a] || slices.ContainsFunc(targetWords, func(t string) bool {
			t = strings.TrimPrefix(t, ".") // a record's field: "….SCAN"
			return t == a || strings.HasPrefix(t, a) && allDigits(t[len(a):])
		}) || slices.Contains(desc, a) || initialsOf(desc, a) || slices.ContainsFunc(properties, func(p property) bool { return p.words[a] || p.tokens[a] }) {
			continue // a property in capitals ("the Q1 HIHI limit") is the property check's
		}
		return w
	}
	return ""
}

// areaFirst reports a name of three or more parts split by colons whose
// first is two to five capitals ("SR:MAG:Q1:CURRENT", "BTS:MAG:Q1"): an
// area said in letters.
func areaFirst(target string) bool {
	parts := strings.Split(target, ":")
	return len(parts) >= 3 && allCaps(parts[0])
}

// acronymGeneric name a part any device may have, not which device.
var acronymGeneric = map[string]bool{"ps": true, "psu": true, "sp": true, "rb": true, "pv": true, "ioc": true, "dc": true, "ac": true}

// initialsOf reports whether consecutive words begin with the letters of
// a ("high voltage" for "hv").
func initialsOf(ws []string, a string) bool {
	for i := 0; i+len(a) <= len(ws); i++ {
		k := 0
		for k < len(a) && strings.HasPrefix(ws[i+k], a[k:k+1]) {
			k++
		}
		if k == len(a) {
			return true
		}
	}
	return false
}
