package nodes

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

// exampleCapabilities is the text of real applications' capabilities —
// the command's demo application (control room) and the weather and error
// tour examples — as the lexical classifier reads it (name, description,
// classifier guide), with the error tour's scenario questions. It is a
// snapshot in testdata: the classifier is tested on capability texts
// written for real use, without the library's tests importing those
// applications (their own tests check their questions end to end).
type exampleCapabilities struct {
	Registries map[string][]struct {
		Name        string                        `json:"name"`
		Description string                        `json:"description"`
		Guide       *capabilities.ClassifierGuide `json:"classifier_guide"`
	} `json:"registries"`
	Scenarios []struct {
		Question   string `json:"question"`
		Capability string `json:"capability"`
	} `json:"errortour_scenarios"`
}

func loadExampleCapabilities(t *testing.T) exampleCapabilities {
	t.Helper()
	b, err := os.ReadFile("testdata/example_capabilities.json")
	if err != nil {
		t.Fatal(err)
	}
	var ec exampleCapabilities
	if err := json.Unmarshal(b, &ec); err != nil {
		t.Fatal(err)
	}
	return ec
}

// exampleRegistries builds a registry per application from the snapshot.
func exampleRegistries(t *testing.T, ec exampleCapabilities) map[string]*capabilities.Registry {
	t.Helper()
	out := map[string]*capabilities.Registry{}
	for app, caps := range ec.Registries {
		reg := capabilities.NewRegistry()
		for _, c := range caps {
			if err := reg.Register(mustCap(t, capSpec{name: c.Name, desc: c.Description, guide: c.Guide})); err != nil {
				t.Fatal(err)
			}
		}
		out[app] = reg
	}
	return out
}

// The offline classifier's threshold on the examples' real capabilities:
// each question selects what it needs, and a question sharing only common
// words ("what", "current", "status", "sensor") with a capability selects
// nothing because of them.
func TestLexicalSelectionOnExampleCapabilities(t *testing.T) {
	ec := loadExampleCapabilities(t)
	regs := exampleRegistries(t, ec)
	tests := []struct {
		registry string
		task     string
		want     []string
	}{
		// controlroom: the demo questions.
		{"controlroom", "What is the beam current?", []string{"channel_finding", "channel_read"}},
		{"controlroom", "Show me the RF cavity voltage over the last 2 hours", []string{"archiver_retrieval"}},
		{"controlroom", "What is the vacuum pressure in sector 3?", []string{"channel_finding", "channel_read"}},
		{"controlroom", "Set the quadrupole Q1 current in the BTS line to 105 A", []string{"channel_write"}},
		{"controlroom", "Which channels measure the vacuum in sector 3?", []string{"channel_finding"}},
		{"controlroom", "How did the beam lifetime change since yesterday?", []string{"archiver_retrieval"}},
		{"controlroom", "read it", []string{"channel_read"}},
		{"controlroom", "and its history?", []string{"archiver_retrieval"}},
		// controlroom: as operators type (the quantities come from channel_read's
		// instructions; typos and abbreviations are read as indexed words).
		{"controlroom", "What is the RF cavity voltage?", []string{"channel_read"}},
		{"controlroom", "whats the beam curent", []string{"channel_finding", "channel_read"}},
		{"controlroom", "What is the vacuum in sector 42?", []string{"channel_finding", "channel_read"}},
		{"controlroom", "temperature of the klystron", []string{"channel_read"}},
		{"controlroom", "dcct", []string{"channel_read"}},
		{"controlroom", "vac sec 3", []string{"channel_finding", "channel_read"}},
		{"controlroom", "bts q3 current", []string{"channel_read"}},
		{"controlroom", "klystron 2 power history", []string{"archiver_retrieval"}},
		{"controlroom", "how did the rf cav 1 voltage change over the past day", []string{"archiver_retrieval"}},
		{"controlroom", "list the klystron channels", []string{"channel_finding"}},
		{"controlroom", "bump the Q2 current in the BTS up to 96 A", []string{"channel_write"}},
		{"controlroom", "klystron power trend", []string{"archiver_retrieval"}},
		{"controlroom", "raise the RF voltage", []string{"channel_write"}},
		// controlroom: only common words.
		{"controlroom", "hello", nil},
		{"controlroom", "What can you do?", nil},
		{"controlroom", "What is the current time?", nil},
		{"controlroom", "What is a storage ring?", nil},
		{"controlroom", "Thank you, that is all for now", nil},
		// weather.
		{"weather", "What is the weather in Paris?", []string{"current_weather"}},
		{"weather", "Is it raining in London?", []string{"current_weather"}},
		{"weather", "How warm is it in San Francisco right now?", []string{"current_weather"}},
		{"weather", "What is the capital of France?", nil},
		{"weather", "What is the current status of the server?", nil},
		{"weather", "hello", nil},
		// errortour: every scenario question selects its capability alone.
		{"errortour", "What is the beam current?", nil},
		{"errortour", "What can you do?", nil},
	}
	for _, sc := range ec.Scenarios {
		tests = append(tests, struct {
			registry string
			task     string
			want     []string
		}{"errortour", sc.Question, []string{sc.Capability}})
	}
	for _, tt := range tests {
		t.Run(tt.registry+"/"+tt.task, func(t *testing.T) {
			ix := newLexicalIndex(regs[tt.registry].All())
			got := ix.selectLexical(tt.task, DefaultOfflineThreshold, DefaultOfflineRelative)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("selected %v, want %v; scores %v", got, want, ix.scores(tt.task))
			}
		})
	}
}
