package agent

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/capgraph/capgraph/state"
)

// TestStoredFormIsTheRoundTrip: the message an event carries is exactly
// the one the store gives back, whichever way storedForm gets it.
func TestStoredFormIsTheRoundTrip(t *testing.T) {
	now := time.Now()
	for _, m := range []state.Message{
		{Role: state.RoleAssistant, Content: "The mean was 500.2 mA <ok> & done", Kind: state.KindAnswer, Turn: 3, Time: now.UTC()},
		{Role: state.RoleAssistant, Content: "local time", Time: now},
		{Role: state.RoleAssistant, Content: "zone", Time: now.In(time.FixedZone("CET", 3600))},
		{Role: state.RoleAssistant, Content: "named zone at offset zero", Time: now.In(time.FixedZone("GMT", 0))},
		{Role: state.RoleAssistant, Content: "local at offset zero", Time: time.Date(2026, 1, 2, 3, 4, 5, 6, utcLocal())},
		{Role: state.RoleAssistant, Content: "year 10000", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Role: state.RoleAssistant, Content: "no time"},
		{Role: state.RoleAssistant, Content: "broken \xff text", Time: now.UTC()},
		{Role: state.RoleAssistant, Content: "report", Kind: state.KindErrorReport, Time: now.UTC(),
			Report: &state.ErrorReport{}},
	} {
		want := m // what storedForm gives when the state cannot be encoded
		if b, err := json.Marshal(m); err == nil {
			want = state.Message{}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
		}
		if got := storedForm(m); !reflect.DeepEqual(got, want) {
			t.Errorf("storedForm(%+v) = %+v; the store gives back %+v", m, got, want)
		}
	}
}

// utcLocal is a location with offset zero that is not time.UTC.
func utcLocal() *time.Location {
	loc, err := time.LoadLocation("Europe/London") // winter: offset zero
	if err != nil {
		return time.FixedZone("Z0", 0)
	}
	return loc
}
