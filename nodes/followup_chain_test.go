package nodes

import "testing"

// A chain of follow-ups keeps the subject of the message that named it, and a
// back-reference ("its") makes a longer message a follow-up too. (The cli
// chat test holds this conversation end to end.)
func TestOfflineTaskFollowUpChain(t *testing.T) {
	tests := []struct {
		name  string
		input string
		prev  []string
		want  string
		joint bool
	}{
		{"second of a chain", "read it", []string{"find the beam current channel", "SR:DCCT:CURRENT"},
			"find the beam current channel — follow-up: read it", true},
		{"third of a chain, 7 words with a reference", "show its history over the last hour",
			[]string{"find the beam current channel", "SR:DCCT:CURRENT", "read it", "500 mA"},
			"find the beam current channel — follow-up: read it — follow-up: show its history over the last hour", true},
		{"a new subject ends the chain", "and the RF voltage?",
			[]string{"find the beam current channel", "…", "What is the vacuum pressure in sector 3?", "…"},
			"What is the vacuum pressure in sector 3? — follow-up: and the RF voltage?", true},
		{"long opener without a reference is new", "and now show me the RF cavity voltage over two hours",
			[]string{"What is the beam current?", "…"}, "and now show me the RF cavity voltage over two hours", false},
		{"a reference beyond twelve words is new", "please show me everything that the archive holds for the RF cavity voltage since yesterday",
			[]string{"What is the beam current?", "…"}, "please show me everything that the archive holds for the RF cavity voltage since yesterday", false},
		// The weather's and the clock's "it" names nothing said before.
		{"weather it starts a new subject", "Is it raining in London?",
			[]string{"What is the beam current?", "500 mA"}, "Is it raining in London?", false},
		{"it's, contracted", "it's cold in Berlin, isn't it?",
			[]string{"What is the beam current?", "500 mA"}, "it's cold in Berlin, isn't it?", false},
		{"is it going to", "is it going to snow tomorrow",
			[]string{"What is the beam current?", "500 mA"}, "is it going to snow tomorrow", false},
		{"the clock's it", "what time is it",
			[]string{"What is the beam current?", "500 mA"}, "what time is it", false},
		// … while an "it" that names the last subject still follows up.
		{"is it within limits", "Is it within limits?",
			[]string{"What is the beam current?", "500 mA"}, "What is the beam current? — follow-up: Is it within limits?", true},
		{"is it stable", "is it stable today?",
			[]string{"Read the RF cavity voltage", "600 kV"}, "Read the RF cavity voltage — follow-up: is it stable today?", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := offlineTask(newState(tt.input, tt.prev...))
			if got.Text != tt.want || got.DependsOnHistory != tt.joint {
				t.Errorf("task = %+v, want %q (depends %v)", got, tt.want, tt.joint)
			}
		})
	}
}
