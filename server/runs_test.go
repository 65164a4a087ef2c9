package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
)

func TestRunEventLogIsBounded(t *testing.T) {
	r := &run{ID: "r", notify: make(chan struct{}), max: 3}
	for range 5 {
		r.append(agent.Event{Type: agent.EventToken, Text: "x"})
	}
	tests := []struct {
		after int
		want  []int
	}{
		{0, []int{3, 4, 5}}, // 1 and 2 were dropped
		{3, []int{4, 5}},
		{5, nil},
		{9, nil},
	}
	for _, tc := range tests {
		evs, _, finished := r.since(tc.after)
		var got []int
		for _, e := range evs {
			got = append(got, e.Seq)
		}
		if finished || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Fatalf("after %d: %v, finished %v; want %v", tc.after, got, finished, tc.want)
		}
	}
	r.finish(nil, false)
	if _, _, finished := r.since(5); !finished {
		t.Fatal("not finished")
	}
}

func BenchmarkChatCompletionStream(b *testing.B) {
	env := newTestEnv(b, nil)
	body, _ := json.Marshal(chatBody("capgraph", true, user("What is the beam current?")))
	b.ReportAllocs()
	for b.Loop() {
		resp, out := env.do(b, "POST", "/v1/chat/completions", keyAlice, body)
		if resp.StatusCode != 200 || !strings.Contains(string(out), "[DONE]") {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
}
