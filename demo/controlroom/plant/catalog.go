package plant

import (
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// Catalog returns the simulated machine's channels (about 250): a 12-sector
// storage ring (SR) with BPMs, quadrupoles, vacuum gauges, ion pumps and
// temperatures, its RF cavities and beam diagnostics, a linac (LINAC), a
// booster (BR) and the booster-to-storage-ring transfer line (BTS). The
// result is a fresh slice; the order is stable.
func Catalog() []Channel {
	var cs []Channel
	add := func(c Channel) { cs = append(cs, c) }

	// Storage-ring beam.
	add(Channel{Name: "SR:DCCT:CURRENT", Description: "stored beam current in the storage ring (DCCT)", Units: "mA",
		Nominal: 500, Noise: 0.05, Drift: 0.8, Precision: 2,
		Synonyms: []string{"beam current", "stored current", "ring current", "dcct"}})
	add(Channel{Name: "SR:BEAM:LIFETIME", Description: "storage ring beam lifetime", Units: "h",
		Nominal: 10.5, Noise: 0.05, Drift: 0.3, Precision: 2, Synonyms: []string{"beam lifetime", "lifetime"}})
	add(Channel{Name: "SR:BEAM:ENERGY", Description: "storage ring beam energy", Units: "GeV",
		Nominal: 1.9, Noise: 0.0001, Precision: 4, Synonyms: []string{"beam energy", "ring energy"}})
	add(Channel{Name: "SR:BEAM:TUNE:X", Description: "horizontal betatron tune of the storage ring", Units: "",
		Nominal: 0.2345, Noise: 0.0002, Precision: 4, Synonyms: []string{"horizontal tune", "tune"}})
	add(Channel{Name: "SR:BEAM:TUNE:Y", Description: "vertical betatron tune of the storage ring", Units: "",
		Nominal: 0.3456, Noise: 0.0002, Precision: 4, Synonyms: []string{"vertical tune", "tune"}})

	// Storage-ring RF: four cavities.
	for i := 1; i <= 4; i++ {
		p := fmt.Sprintf("SR:RF:CAV%d:", i)
		cav := fmt.Sprintf("cavity %d", i)
		add(Channel{Name: p + "VOLT", Description: fmt.Sprintf("storage ring RF %s gap voltage setpoint", cav), Units: "kV",
			Nominal: 600 + float64(i), Noise: 0.4, Drift: 1.5, Precision: 1, Writable: true, Low: 0, High: 800,
			Synonyms: []string{"rf voltage", "cavity voltage", "rf cavity voltage", "gap voltage"}})
		add(Channel{Name: p + "PHASE", Description: fmt.Sprintf("storage ring RF %s phase", cav), Units: "deg",
			Nominal: 10 * float64(i), Noise: 0.05, Precision: 2, Writable: true, Low: -180, High: 180,
			Synonyms: []string{"rf phase", "cavity phase"}})
		add(Channel{Name: p + "FWD_POWER", Description: fmt.Sprintf("storage ring RF %s forward power", cav), Units: "kW",
			Nominal: 75 + float64(i), Noise: 0.3, Drift: 1, Precision: 1, Synonyms: []string{"rf power", "forward power", "cavity power"}})
		add(Channel{Name: p + "REFL_POWER", Description: fmt.Sprintf("storage ring RF %s reflected power", cav), Units: "kW",
			Nominal: 1.2, Noise: 0.05, Precision: 2, Synonyms: []string{"reflected power", "rf reflected power"}})
		add(Channel{Name: p + "TEMP", Description: fmt.Sprintf("storage ring RF %s body temperature", cav), Units: "degC",
			Nominal: 31 + 0.5*float64(i), Noise: 0.05, Drift: 0.2, Precision: 2, Synonyms: []string{"cavity temperature", "rf temperature"}})
	}
	add(Channel{Name: "SR:RF:FREQ", Description: "storage ring RF master oscillator frequency", Units: "MHz",
		Nominal: 499.654, Noise: 0.000001, Precision: 6, Synonyms: []string{"rf frequency", "master oscillator"}})

	// Storage-ring sectors C01..C12.
	for s := 1; s <= 12; s++ {
		p := fmt.Sprintf("SR:C%02d:", s)
		sec := fmt.Sprintf("sector %d", s)
		for b := 1; b <= 4; b++ {
			for _, plane := range []struct{ axis, word string }{{"X", "horizontal"}, {"Y", "vertical"}} {
				off := float64((s*7+b*3)%11-5) * 0.002
				add(Channel{Name: fmt.Sprintf("%sBPM%d:%s", p, b, plane.axis),
					Description: fmt.Sprintf("%s beam position at BPM %d in storage ring %s", plane.word, b, sec), Units: "mm",
					Nominal: off, Noise: 0.002, Drift: 0.003, Precision: 4,
					Synonyms: []string{"beam position", "orbit", "bpm", plane.word + " position"}})
			}
		}
		for _, q := range []struct{ name, word string }{{"QF", "focusing"}, {"QD", "defocusing"}} {
			add(Channel{Name: p + q.name + ":CURRENT", Description: fmt.Sprintf("%s quadrupole magnet current in storage ring %s", q.word, sec), Units: "A",
				Nominal: 180 + float64(s)/10, Noise: 0.005, Precision: 3, Writable: true, Low: 0, High: 250,
				Synonyms: []string{"quadrupole current", "quad current", "magnet current"}})
		}
		base := 1.1e-9 + float64(s%4)*0.15e-9
		if s == 3 {
			base = 2.6e-9 // sector 3 has a slightly worse vacuum: something to find
		}
		for g := 1; g <= 2; g++ {
			add(Channel{Name: fmt.Sprintf("%sVAC:GAUGE%d", p, g), Description: fmt.Sprintf("vacuum pressure at ion gauge %d in storage ring %s", g, sec), Units: "Torr",
				Nominal: base * (1 + 0.1*float64(g-1)), Noise: base * 0.02, Drift: base * 0.05, Precision: -1,
				Synonyms: []string{"vacuum pressure", "vacuum", "pressure", "ion gauge"}})
		}
		add(Channel{Name: p + "VAC:PUMP:CURRENT", Description: fmt.Sprintf("ion pump current in storage ring %s (rises with pressure)", sec), Units: "uA",
			Nominal: base * 1e9 * 1.5, Noise: 0.02, Precision: 2, Synonyms: []string{"ion pump", "pump current"}})
		add(Channel{Name: p + "TEMP:MAG", Description: fmt.Sprintf("magnet cooling water temperature in storage ring %s", sec), Units: "degC",
			Nominal: 24 + float64(s%3)*0.3, Noise: 0.02, Drift: 0.15, Precision: 2, Synonyms: []string{"magnet temperature", "temperature"}})
		add(Channel{Name: p + "TEMP:AIR", Description: fmt.Sprintf("tunnel air temperature in storage ring %s", sec), Units: "degC",
			Nominal: 22.5 + float64(s%2)*0.4, Noise: 0.02, Drift: 0.3, Precision: 2, Synonyms: []string{"air temperature", "tunnel temperature", "temperature"}})
	}

	// Linac.
	add(Channel{Name: "LINAC:GUN:CURRENT", Description: "electron gun emission current of the linac", Units: "mA",
		Nominal: 1.2, Noise: 0.01, Precision: 3, Synonyms: []string{"gun current", "emission current"}})
	add(Channel{Name: "LINAC:GUN:VOLT", Description: "electron gun high voltage of the linac", Units: "kV",
		Nominal: 120, Noise: 0.05, Precision: 2, Writable: true, Low: 0, High: 140, Synonyms: []string{"gun voltage", "gun high voltage"}})
	add(Channel{Name: "LINAC:ENERGY", Description: "linac output beam energy", Units: "MeV",
		Nominal: 50, Noise: 0.02, Precision: 2, Synonyms: []string{"linac energy"}})
	for k := 1; k <= 4; k++ {
		add(Channel{Name: fmt.Sprintf("LINAC:KLY%d:POWER", k), Description: fmt.Sprintf("linac klystron %d output power", k), Units: "MW",
			Nominal: 20 + float64(k)/2, Noise: 0.05, Drift: 0.1, Precision: 2, Synonyms: []string{"klystron power"}})
		add(Channel{Name: fmt.Sprintf("LINAC:KLY%d:HV", k), Description: fmt.Sprintf("linac klystron %d modulator high voltage", k), Units: "kV",
			Nominal: 260, Noise: 0.2, Precision: 1, Writable: true, Low: 0, High: 300, Synonyms: []string{"klystron voltage", "modulator voltage"}})
	}

	// Booster.
	add(Channel{Name: "BR:RF:VOLT", Description: "booster RF cavity voltage", Units: "kV",
		Nominal: 350, Noise: 0.3, Precision: 1, Writable: true, Low: 0, High: 450, Synonyms: []string{"booster rf voltage"}})
	add(Channel{Name: "BR:BEAM:CURRENT", Description: "booster circulating beam current", Units: "mA",
		Nominal: 3.1, Noise: 0.05, Precision: 2, Synonyms: []string{"booster current", "booster beam current"}})
	for _, m := range []struct{ name, word string }{{"QF", "focusing quadrupole"}, {"QD", "defocusing quadrupole"}, {"BEND", "dipole bend"}} {
		add(Channel{Name: "BR:MAG:" + m.name + ":CURRENT", Description: "booster " + m.word + " magnet string current", Units: "A",
			Nominal: 400, Noise: 0.05, Precision: 2, Writable: true, Low: 0, High: 600, Synonyms: []string{"booster magnet current"}})
	}

	// Booster-to-storage-ring transfer line.
	for q := 1; q <= 6; q++ {
		add(Channel{Name: fmt.Sprintf("BTS:MAG:Q%d:CURRENT", q), Description: fmt.Sprintf("quadrupole Q%d magnet current in the BTS transfer line", q), Units: "A",
			Nominal: 90 + 2*float64(q), Noise: 0.01, Precision: 2, Writable: true, Low: 0, High: 150,
			Synonyms: []string{"quadrupole current", "quad current", "transfer line", "magnet current"}})
	}
	for b := 1; b <= 2; b++ {
		add(Channel{Name: fmt.Sprintf("BTS:MAG:B%d:CURRENT", b), Description: fmt.Sprintf("dipole bend B%d magnet current in the BTS transfer line", b), Units: "A",
			Nominal: 310, Noise: 0.02, Precision: 2, Writable: true, Low: 0, High: 400, Synonyms: []string{"dipole current", "bend current", "transfer line"}})
	}
	for b := 1; b <= 4; b++ {
		for _, axis := range []string{"X", "Y"} {
			add(Channel{Name: fmt.Sprintf("BTS:BPM%d:%s", b, axis), Description: fmt.Sprintf("beam position %s at BPM %d in the BTS transfer line", axis, b), Units: "mm",
				Noise: 0.01, Precision: 3, Synonyms: []string{"beam position", "transfer line"}})
		}
	}
	add(Channel{Name: "BTS:CHARGE", Description: "injected bunch charge measured in the BTS transfer line", Units: "nC",
		Nominal: 0.8, Noise: 0.02, Precision: 3, Synonyms: []string{"injected charge", "bunch charge", "injection efficiency"}})
	for i := range cs {
		cs[i].Ranges = rangesOf(cs[i])
	}
	return cs
}

// rangesOf gives the storage ring's beam, RF, vacuum and temperature
// channels their normal and alarm ranges, the ones a verdict is made
// from; other channels are not judged.
func rangesOf(c Channel) *capabilities.Limits {
	between, atMost, atLeast := capabilities.Between, capabilities.AtMost, capabilities.AtLeast
	lim := func(normal, alarm capabilities.Range) *capabilities.Limits {
		return &capabilities.Limits{Normal: normal, Alarm: alarm}
	}
	n := c.Name
	switch {
	case n == "SR:DCCT:CURRENT":
		return lim(between(490, 510), between(400, 520))
	case n == "SR:BEAM:LIFETIME":
		return lim(atLeast(8), atLeast(5))
	case n == "SR:BEAM:ENERGY":
		return lim(between(1.895, 1.905), between(1.89, 1.91))
	case n == "SR:BEAM:TUNE:X":
		return lim(between(0.230, 0.240), between(0.225, 0.245))
	case n == "SR:BEAM:TUNE:Y":
		return lim(between(0.340, 0.350), between(0.335, 0.355))
	case strings.HasPrefix(n, "SR:C") && strings.Contains(n, ":BPM"):
		return lim(between(-0.1, 0.1), between(-0.5, 0.5))
	case strings.HasPrefix(n, "SR:C") && strings.Contains(n, ":VAC:GAUGE"):
		return lim(atMost(5e-9), atMost(1e-8))
	case strings.HasSuffix(n, ":VOLT") && strings.HasPrefix(n, "SR:RF:CAV"):
		return lim(between(580, 620), between(500, 700))
	case strings.HasSuffix(n, ":REFL_POWER"):
		return lim(atMost(3), atMost(10))
	case strings.HasPrefix(n, "SR:RF:CAV") && strings.HasSuffix(n, ":TEMP"):
		return lim(atMost(40), atMost(45))
	case strings.HasSuffix(n, ":TEMP:MAG"):
		return lim(atMost(30), atMost(35))
	case strings.HasSuffix(n, ":TEMP:AIR"):
		return lim(atMost(26), atMost(30))
	}
	return nil
}
