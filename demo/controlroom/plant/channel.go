package plant

import (
	"fmt"
	"math"
	"strconv"

	"github.com/capgraph/capgraph/capabilities"
)

// Channel is one process variable of the simulated machine.
type Channel struct {
	// Name is the EPICS-style address, e.g. "SR:RF:CAV1:VOLT".
	Name string `json:"name"`
	// Description says what it measures, in words operators use.
	Description string `json:"description"`
	Units       string `json:"units"`
	// Nominal is the value before any write.
	Nominal float64 `json:"nominal"`
	// Noise is the amplitude of the deterministic noise (uniform ±Noise).
	Noise float64 `json:"noise,omitempty"`
	// Drift is the amplitude of a slow sinusoidal drift (6 h period).
	Drift float64 `json:"drift,omitempty"`
	// Writable channels accept setpoints within [Low, High].
	Writable bool    `json:"writable,omitempty"`
	Low      float64 `json:"low,omitempty"`
	High     float64 `json:"high,omitempty"`
	// Precision is the number of decimals shown; negative means scientific
	// notation (vacuum pressures).
	Precision int `json:"precision"`
	// Synonyms are phrases channel_finding matches ("beam current").
	Synonyms []string `json:"synonyms,omitempty"`
	// Ranges are the channel's normal and alarm ranges, for verdicts ("is
	// the beam ok?"); nil: the channel is not judged.
	Ranges *capabilities.Limits `json:"ranges,omitempty"`
}

// Format renders a value of the channel with its precision (no units).
func (c Channel) Format(v float64) string {
	if c.Precision < 0 {
		return strconv.FormatFloat(v, 'e', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', c.Precision, 64)
}

// FormatWithUnits renders a value followed by the channel's units.
func (c Channel) FormatWithUnits(v float64) string {
	if c.Units == "" {
		return c.Format(v)
	}
	return c.Format(v) + " " + c.Units
}

// Tolerance is how far a readback may be from a setpoint and still verify:
// the noise can move it by at most Noise, so twice that, plus a little for
// rounding.
func (c Channel) Tolerance(target float64) float64 {
	return 2*c.Noise + 1e-9*math.Max(1, math.Abs(target))
}

// Limits renders the write range, e.g. "0 to 150 A".
func (c Channel) Limits() string {
	return fmt.Sprintf("%s to %s", c.Format(c.Low), c.FormatWithUnits(c.High))
}
