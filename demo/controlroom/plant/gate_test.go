package plant_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/intent"
)

// write is the action of a write to c at v, described as the catalog
// describes c.
func write(c plant.Channel, v float64) capabilities.Action {
	return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: c.Name, Value: v, Unit: c.Units, Description: c.Description}}}
}

// request is an operator's change of c in the words of a description
// without its asides in brackets.
func request(description string, c plant.Channel) string {
	if i := strings.Index(description, " ("); i > 0 {
		description = description[:i]
	}
	return "Set the " + description + " to " + c.FormatWithUnits(c.Nominal)
}

// The gate against the catalog: every channel is permitted for a change
// asked in its own description's words (no false refusal), and refused
// for a change asked in the words of another channel whose description
// differs from its own in one word only (its twin: the vertical tune and
// the horizontal one, BPM 3's position and BPM 4's).
func TestTheGateTellsEveryChannelFromItsTwin(t *testing.T) {
	cat := plant.Catalog()
	twins := 0
	for _, c := range cat {
		if c.Units == "h" {
			continue // a number of hours reads as a time ("for 10 h"), no value
		}
		v, _ := strconv.ParseFloat(c.Format(c.Nominal), 64) // the value as the request writes it
		in := intent.FromMessage(request(c.Description, c)).Intent
		if !in.IsChange() {
			t.Errorf("%q reads as %s", request(c.Description, c), in.Summary())
			continue
		}
		if err := in.Permits(write(c, v), nil); err != nil {
			t.Errorf("%q refuses %s: %v", request(c.Description, c), c.Name, err)
		}
		for _, o := range cat {
			if o.Name == c.Name || o.Units != c.Units || !oneWordApart(c.Description, o.Description) {
				continue
			}
			twins++
			msg := request(o.Description, c)
			in := intent.FromMessage(msg).Intent
			if err := in.Permits(write(c, v), nil); err == nil {
				t.Errorf("%q permits %s (%q)", msg, c.Name, c.Description)
			}
		}
	}
	if twins == 0 {
		t.Fatal("no twins in the catalog")
	}
	t.Logf("%d channels, %d twins", len(cat), twins)
}

// oneWordApart reports two descriptions of as many words that differ in
// exactly one.
func oneWordApart(a, b string) bool {
	wa, wb := strings.Fields(a), strings.Fields(b)
	if len(wa) != len(wb) {
		return false
	}
	diff := 0
	for k := range wa {
		if wa[k] != wb[k] {
			diff++
		}
	}
	return diff == 1
}
