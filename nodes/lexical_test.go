package nodes

import (
	"slices"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

// A small lab: a live reading, a history and a setpoint capability, worded
// as an application would word them.
func lab(t *testing.T) *lexicalIndex {
	t.Helper()
	reg := capabilities.NewRegistry()
	err := reg.Register(
		mustCap(t, capSpec{name: "sensor_read", desc: "Read the present temperature, pressure or humidity of a laboratory sensor.",
			guide: &capabilities.ClassifierGuide{Instructions: "Select for present readings (not their history or trend, not to set or change anything)."}}),
		mustCap(t, capSpec{name: "sensor_history", desc: "Retrieve the history of a sensor over a past time range: trends, min, max and mean.",
			guide: &capabilities.ClassifierGuide{Instructions: "Select when the user asks how readings evolved since yesterday or over the last hours."}}),
		mustCap(t, capSpec{name: "thermostat_set", desc: "Set the thermostat to a new setpoint the user gives.",
			guide: &capabilities.ClassifierGuide{Instructions: "Select only to set or change the thermostat.",
				Examples: []capabilities.ClassifierExample{ex("Set the thermostat in the clean room to 21 degrees", true)}}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return newLexicalIndex(reg.All())
}

func TestLexicalReadsTyposAbbreviationsAndSynonyms(t *testing.T) {
	ix := lab(t)
	tests := []struct {
		task string
		want []string
	}{
		// Typos: within the edit distance, same first letter.
		{"what is the temprature", []string{"sensor_read"}},
		{"what's the temp? isn't it high", []string{"sensor_read"}},
		{"presure in the lab", []string{"sensor_read"}},
		{"humidty?", []string{"sensor_read"}},
		{"pressure histroy", []string{"sensor_history"}},
		{"themrostat to 20 degrees please", []string{"thermostat_set"}},
		// Abbreviations: the only indexed word they start.
		{"temp now", []string{"sensor_read"}},
		{"hum in lab 3", []string{"sensor_read"}},
		// Generic synonyms of changing and of the past.
		{"raise the thermostat by 2", []string{"thermostat_set"}},
		{"bump the thermostat", []string{"thermostat_set"}},
		{"pressure trend", []string{"sensor_history"}},
		{"archived humidity", []string{"sensor_history"}},
		// Words a capability excludes in a negated phrase veto it: the
		// history and the change are not sensor_read's.
		{"temperature history since yesterday", []string{"sensor_history"}},
		{"change the temperature of the thermostat", []string{"thermostat_set"}},
		// A short or unrelated unknown word is not forced onto a word.
		{"what is the team doing", nil},
		{"lower", []string{"thermostat_set"}},
		{"what is the weather", nil},
	}
	for _, tt := range tests {
		t.Run(tt.task, func(t *testing.T) {
			got := ix.selectLexical(tt.task, DefaultOfflineThreshold, DefaultOfflineRelative)
			if !slices.Equal(got, tt.want) {
				t.Errorf("selected %v, want %v; scores %v", got, tt.want, ix.scores(tt.task))
			}
		})
	}
}

// An example's nouns do not select a capability when another capability
// states the task's words as its own: "clean room temperature" is a
// reading, although the thermostat's example mentions the clean room.
func TestLexicalExampleWordsYieldToStatedWords(t *testing.T) {
	ix := lab(t)
	if got := ix.selectLexical("clean room temperature", DefaultOfflineThreshold, DefaultOfflineRelative); !slices.Equal(got, []string{"sensor_read"}) {
		t.Errorf("selected %v; scores %v", got, ix.scores("clean room temperature"))
	}
	// With no stated word at all, example words still select.
	if got := ix.selectLexical("clean room", DefaultOfflineThreshold, DefaultOfflineRelative); !slices.Equal(got, []string{"thermostat_set"}) {
		t.Errorf("selected %v; scores %v", got, ix.scores("clean room"))
	}
}

func TestSplitNegated(t *testing.T) {
	aff, neg := splitNegated("Live values (not their history, trend or average). Not for writes; temperatures.")
	if !slices.Equal(aff, []string{"liv", "valu", "temperatur"}) {
		t.Errorf("affirmative %v", aff)
	}
	if !slices.Equal(neg, []string{"history", "history", "mean", "writ"}) {
		t.Errorf("negated %v", neg)
	}
}
