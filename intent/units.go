package intent

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// unit is a known unit: its dimension and its factor to the dimension's base
// unit, so "0.61 MV" and "610 kV" compare equal.
type unit struct {
	dim   string
	scale float64
}

// baseUnits are the units written with a symbol an SI prefix may precede.
var baseUnits = map[string]unit{
	"A": {"A", 1}, "V": {"V", 1}, "W": {"W", 1}, "Hz": {"Hz", 1}, "T": {"T", 1},
	"Pa": {"Pa", 1}, "bar": {"Pa", 1e5}, "s": {"s", 1}, "m": {"m", 1}, "rad": {"rad", 1},
	"eV": {"eV", 1}, "Ω": {"Ω", 1}, "ohm": {"Ω", 1},
}

// plainUnits take no prefix.
var plainUnits = map[string]unit{
	"Torr": {"Pa", 133.322368421}, "°C": {"°C", 1}, "K": {"K", 1}, "%": {"%", 1}, "deg": {"deg", 1},
	"min": {"s", 60},
}

var siPrefixes = map[string]float64{"p": 1e-12, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "μ": 1e-6, "m": 1e-3,
	"k": 1e3, "M": 1e6, "G": 1e9}

// unitAliases are spellings people type (compared in lower case) and the
// symbol they mean. Lower-case symbols whose prefix is ambiguous ("mv":
// millivolt or megavolt?) are deliberately absent: such a unit is unknown,
// and an unknown unit leaves a number to the device's own unit: a word that
// looks like one after a number makes it no value (unknownUnitAfter).
var unitAliases = map[string]string{
	"a": "A", "amp": "A", "amps": "A", "ampere": "A", "amperes": "A",
	"ma": "mA", "milliamp": "mA", "milliamps": "mA", "milliampere": "mA", "milliamperes": "mA",
	"ka": "kA", "ua": "uA", "kiloamp": "kA", "kiloamps": "kA",
	"v": "V", "volt": "V", "volts": "V", "kv": "kV", "kilovolt": "kV", "kilovolts": "kV",
	"megavolt": "MV", "megavolts": "MV", "millivolt": "mV", "millivolts": "mV",
	"w": "W", "watt": "W", "watts": "W", "kw": "kW", "kilowatt": "kW", "kilowatts": "kW",
	"hz": "Hz", "hertz": "Hz", "khz": "kHz", "mhz": "MHz", "ghz": "GHz",
	"t": "T", "tesla": "T", "mt": "mT", "gauss": "gauss",
	"torr": "Torr", "mbar": "mbar", "bar": "bar", "pa": "Pa", "pascal": "Pa", "pascals": "Pa",
	"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "ms": "ms",
	"deg": "deg", "degree": "deg", "degrees": "deg", "degc": "°C", "°c": "°C", "celsius": "°C", "kelvin": "K",
	"grad": "deg", "degré": "deg", "degrés": "deg", "°": "deg",
	"percent": "%", "percents": "%", "pct": "%", "prozent": "%", "procent": "%", "pourcent": "%", "pourcents": "%", "%": "%", "ev": "eV", "kev": "keV", "mev": "MeV", "gev": "GeV",
	// Long names with their prefixes and plurals, and the French and German
	// spellings: a unit word capgraph does not know leaves the value without
	// a unit (unknownUnitAfter).
	"ampère": "A", "ampères": "A", "microamp": "uA", "microamps": "uA", "microampere": "uA", "microamperes": "uA",
	"nanoamp": "nA", "nanoamps": "nA", "nanoampere": "nA", "nanoamperes": "nA", "kiloampere": "kA", "kiloamperes": "kA",
	"milliampère": "mA", "milliampères": "mA", "kiloampère": "kA", "kiloampères": "kA",
	"megawatt": "MW", "megawatts": "MW", "mégawatt": "MW", "mégawatts": "MW", "milliwatt": "mW", "milliwatts": "mW",
	"kilohertz": "kHz", "megahertz": "MHz", "mégahertz": "MHz", "gigahertz": "GHz",
	"teslas": "T", "millitesla": "mT", "milliteslas": "mT", "kilogauss": "kilogauss",
	"bars": "bar", "millibar": "mbar", "millibars": "mbar", "pascale": "Pa",
	"millisecond": "ms", "milliseconds": "ms", "microsecond": "us", "microseconds": "us", "nanosecond": "ns", "nanoseconds": "ns",
	"seconde": "s", "secondes": "s", "milliseconde": "ms", "millisecondes": "ms", "sekunde": "s", "sekunden": "s",
	"millisekunde": "ms", "millisekunden": "ms", "minute": "min", "minutes": "min", "minuten": "min",
	"ohms": "Ω", "kiloohm": "kΩ", "kiloohms": "kΩ", "kilohm": "kΩ", "kilohms": "kΩ", "megaohm": "MΩ", "megaohms": "MΩ", "megohm": "MΩ", "megohms": "MΩ",
	"radian": "rad", "radians": "rad", "milliradian": "mrad", "milliradians": "mrad", "mrad": "mrad", "urad": "urad",
	"electronvolt": "eV", "electronvolts": "eV", "kiloelectronvolt": "keV", "kiloelectronvolts": "keV",
	"megaelectronvolt": "MeV", "megaelectronvolts": "MeV", "gigaelectronvolt": "GeV", "gigaelectronvolts": "GeV",
	"meter": "m", "meters": "m", "metre": "m", "metres": "m", "millimeter": "mm", "millimeters": "mm", "millimetre": "mm",
	"millimetres": "mm", "micrometer": "um", "micrometers": "um", "micrometre": "um", "micrometres": "um", "micron": "um", "microns": "um",
	"nanometer": "nm", "nanometers": "nm", "nanometre": "nm", "nanometres": "nm", "mm": "mm", "um": "um", "nm": "nm",
}

// unitLike reports a word (in lower case) that looks like a unit capgraph
// does not know: a prefix's or a unit's name in another spelling, plural
// or language ("kilovatios", "millibares", "teslas", "Grad"), or a prefix
// before a unit letter it does not know ("mÅ"). After a number, such a word
// leaves the number without the unit it was given.
func unitLike(w string) bool {
	for _, p := range unitPrefixNames {
		if strings.HasPrefix(w, p) && len(w) > len(p) {
			return true
		}
	}
	for _, stem := range unitStems {
		if strings.Contains(w, stem) {
			return true
		}
	}
	if foldedSymbols[w] {
		return true
	}
	if r := []rune(w); len(r) == 2 && strings.ContainsRune("pnuµμmkgc", r[0]) && r[1] > unicode.MaxASCII && unicode.IsLetter(r[1]) {
		return true
	}
	return false
}

// foldedSymbols are the unit symbols capgraph knows, in lower case: a word
// that is one of them in another case and no unit itself ("mv": millivolt
// or megavolt?) names a unit, and which would be a guess.
var foldedSymbols = func() map[string]bool {
	m := map[string]bool{}
	for b := range baseUnits {
		m[strings.ToLower(b)] = true
		for p := range siPrefixes {
			m[strings.ToLower(p+b)] = true
		}
	}
	for u := range plainUnits {
		m[strings.ToLower(u)] = true
	}
	return m
}()

var (
	unitPrefixNames = []string{"kilo", "mega", "méga", "milli", "micro", "mikro", "nano", "giga", "pico", "centi", "deci"}
	unitStems       = []string{"amp", "volt", "watt", "vatio", "tesl", "gauss", "hertz", "herz", "pascal", "torr", "kelvin", "celsius",
		"fahrenheit", "degr", "grad", "sekund", "second", "segund", "meter", "metre", "metro", "ohm", "radian", "electron", "elektron"}
)

// kilogauss is a thousand gauss.
var kilogauss = unit{"T", 1e-1}

// gauss is not a symbol with prefixes here ("G" is giga).
var gauss = unit{"T", 1e-4}

// CanonicalUnit returns the symbol a unit is written with ("amps" → "A",
// "kv" → "kV"), or u trimmed when it is not a unit capgraph knows.
func CanonicalUnit(u string) string {
	u = strings.TrimSpace(u)
	if _, ok := lookupUnit(u); ok {
		if a, ok := unitAliases[strings.ToLower(u)]; ok && !exactUnit(u) {
			return a
		}
		return u
	}
	return u
}

// KnownUnit reports whether u is a unit capgraph knows (a symbol such as
// "kV", or a spelling such as "amps").
func KnownUnit(u string) bool {
	_, ok := lookupUnit(strings.TrimSpace(u))
	return ok
}

func exactUnit(u string) bool {
	if _, ok := baseUnits[u]; ok {
		return true
	}
	if _, ok := plainUnits[u]; ok {
		return true
	}
	_, ok := prefixed(u)
	return ok
}

func prefixed(u string) (unit, bool) {
	if u == "Grad" {
		return unit{}, false // German degrees, never gigaradians
	}
	for p, f := range siPrefixes {
		if rest, ok := strings.CutPrefix(u, p); ok && rest != "" {
			if b, ok := baseUnits[rest]; ok {
				return unit{b.dim, b.scale * f}, true
			}
		}
	}
	return unit{}, false
}

// lookupUnit finds a unit: exactly as written (so "mA" is milli and "MA"
// mega), else by a known spelling.
func lookupUnit(u string) (unit, bool) {
	if u == "" {
		return unit{}, false
	}
	if b, ok := baseUnits[u]; ok {
		return b, true
	}
	if b, ok := plainUnits[u]; ok {
		return b, true
	}
	if b, ok := prefixed(u); ok {
		return b, true
	}
	a, ok := unitAliases[strings.ToLower(u)]
	if !ok {
		return unit{}, false
	}
	switch a {
	case "gauss":
		return gauss, true
	case "kilogauss":
		return kilogauss, true
	}
	if b, ok := baseUnits[a]; ok {
		return b, true
	}
	if b, ok := plainUnits[a]; ok {
		return b, true
	}
	return prefixed(a)
}

// quantityPattern is a number with an optional unit right after it; a
// decimal point may be a comma ("105,5 A").
var quantityPattern = regexp.MustCompile(`^\s*([-+]?(?:\d+(?:\.\d*|,\d+)?|\.\d+)(?:[eE][-+]?\d+)?)(?:[\s\x{00A0}\x{202F}\x{2009}]*([\pL°%]+))?`)

// ParseQuantity reads a number at the start of s and the unit right after
// it (after a space, a no-break space or none), when that is a unit
// capgraph knows ("105 A", "610kV", "0.5 amps",
// "105,5 A", "−3 A" with a typographic minus); the unit comes back in its
// canonical symbol. Anything after is ignored. A comma followed by exactly
// three digits ("1,000") is a thousands separator in English and a
// decimal comma in German and French: it is not read as a number (but
// "0,105" is).
func ParseQuantity(s string) (value float64, unit string, ok bool) {
	s = strings.TrimLeft(s, " \t")
	if rest, ok := strings.CutPrefix(s, "−"); ok {
		s = "-" + rest
	}
	m := quantityPattern.FindStringSubmatch(s)
	if m == nil {
		return 0, "", false
	}
	num := m[1]
	if i := strings.IndexByte(num, ','); i >= 0 {
		digits := strings.IndexFunc(num[i+1:], func(r rune) bool { return r < '0' || r > '9' })
		if digits < 0 {
			digits = len(num) - i - 1
		}
		if digits == 3 && strings.TrimLeft(num[:i], "+-") != "0" {
			return 0, "", false
		}
		num = strings.Replace(num, ",", ".", 1)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, "", false
	}
	if m[2] != "" {
		if _, known := lookupUnit(m[2]); known {
			unit = CanonicalUnit(m[2])
		}
	}
	if unit == "deg" && degreeScale(s[len(m[0]):]) == "C" {
		unit = "°C" // "20 degrees Celsius", "20 Grad Celsius", "20 deg C"
	}
	return v, unit, true
}

// degreeScale is the temperature scale named right after a unit of
// degrees: "C" for "C" or "Celsius", "F" for "F" or "Fahrenheit", else "".
func degreeScale(after string) string {
	w := strings.TrimLeft(after, " \t\u00a0")
	if i := strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
		w = w[:i]
	}
	switch strings.ToLower(w) {
	case "c", "celsius":
		return "C"
	case "f", "fahrenheit":
		return "F"
	}
	return ""
}

// statedValuePattern finds where a requested value starts: "to 105",
// "at 105", "= 105", "→ 105".
var statedValuePattern = regexp.MustCompile(`(?i)(?:\bto|\bat|=|->|→)\s*[-+.\d]`)

// StatedValue returns the value a text asks to set: the number after "to",
// "at", "=" or "→" (so "from 92 to 105 A" gives 105 A), with its unit.
func StatedValue(text string) (value float64, unit string, ok bool) {
	for _, loc := range statedValuePattern.FindAllStringIndex(text, -1) {
		start := loc[1] - 1 // the first character of the number
		if v, u, ok := ParseQuantity(text[start:]); ok && !clockTime(text[start:]) {
			return v, u, true
		}
	}
	return 0, "", false
}

// clockTime reports a time of day ("at 10:30"), which is not a value.
func clockTime(s string) bool {
	i := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '-' || r == '+') })
	return i > 0 && s[i] == ':'
}

// sameQuantity compares a stated value with an action's value: scaled by
// their units when both are known (a different dimension never matches),
// else by their numbers. An action's unit capgraph does not know ("A/s")
// is not the unit stated, and a value that is not finite is no value.
func sameQuantity(want float64, wantUnit string, got float64, gotUnit string) bool {
	if math.IsNaN(got) || math.IsInf(got, 0) || math.IsNaN(want) || math.IsInf(want, 0) {
		return false
	}
	gotUnit = strings.TrimSpace(gotUnit)
	wu, wok := lookupUnit(strings.TrimSpace(wantUnit))
	gu, gok := lookupUnit(gotUnit)
	if wok && gotUnit != "" && !gok {
		return false
	}
	if wok && gok {
		if wu.dim != gu.dim {
			return false
		}
		want, got = want*wu.scale, got*gu.scale
	}
	return math.Abs(want-got) <= 1e-9*math.Max(1, math.Max(math.Abs(want), math.Abs(got)))
}

// Convert expresses v, in unit from, in unit to ("0.105 kA" is 105 A);
// false when either unit is unknown or they measure different things.
func Convert(v float64, from, to string) (float64, bool) {
	fu, fok := lookupUnit(strings.TrimSpace(from))
	tu, tok := lookupUnit(strings.TrimSpace(to))
	if !fok || !tok || fu.dim != tu.dim {
		return 0, false
	}
	return v * fu.scale / tu.scale, true
}
