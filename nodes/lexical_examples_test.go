package nodes

import (
	"slices"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/examples/controlroom/plant"
	"github.com/capgraph/capgraph/examples/errortour/tour"
	weatherex "github.com/capgraph/capgraph/examples/weather/weather"
)

// exampleRegistries builds the registries of the examples in examples/, as
// their programs register them.
func exampleRegistries(t *testing.T) map[string]*capabilities.Registry {
	t.Helper()
	p, err := plant.New(plant.Config{Seed: 1, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	cr := capabilities.NewRegistry()
	if err := plant.Register(cr, p); err != nil {
		t.Fatal(err)
	}
	wr := capabilities.NewRegistry()
	if err := wr.Register(weatherex.NewCapability(&weatherex.Client{BaseURL: "http://127.0.0.1:1"})); err != nil {
		t.Fatal(err)
	}
	tc, err := tour.New().Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	tr := capabilities.NewRegistry()
	if err := tr.Register(tc...); err != nil {
		t.Fatal(err)
	}
	return map[string]*capabilities.Registry{"controlroom": cr, "weather": wr, "errortour": tr}
}

// The offline classifier's threshold on the examples' real capabilities:
// each question selects what it needs, and a question sharing only common
// words ("what", "current", "status", "sensor") with a capability selects
// nothing because of them.
func TestLexicalSelectionOnExampleCapabilities(t *testing.T) {
	regs := exampleRegistries(t)
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
	for _, sc := range tour.Scenarios {
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
