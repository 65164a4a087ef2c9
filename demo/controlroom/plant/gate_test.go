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
// for a change asked in the words of any other channel of its unit — its
// twin that one word tells apart (the vertical tune and the horizontal
// one, BPM X and Y), its sibling in another sector or line (the
// horizontal position at BPM 1 in sector 1 and in the BTS line), another
// kind in the same sector (the tunnel air's temperature and the magnet
// cooling water's).
func TestTheGateTellsEveryChannelFromEveryOther(t *testing.T) {
	cat := plant.Catalog()
	pairs := 0
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
			if o.Name == c.Name || o.Units != c.Units {
				continue
			}
			pairs++
			msg := request(o.Description, c)
			if err := intent.FromMessage(msg).Intent.Permits(write(c, v), nil); err == nil {
				t.Errorf("%q permits %s (%q)", msg, c.Name, c.Description)
			}
		}
	}
	if pairs < 1000 {
		t.Fatalf("only %d pairs of channels of one unit in the catalog", pairs)
	}
	t.Logf("%d channels, %d pairs", len(cat), pairs)
}
