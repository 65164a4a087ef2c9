package controlroom_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// conversationCase is one line of testdata/conversation_corpus.txt.
type conversationCase struct {
	line  int
	turns []string
	facts []string
}

func readConversations(t *testing.T) []conversationCase {
	t.Helper()
	f, err := os.Open("testdata/conversation_corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []conversationCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		turns, facts, ok := strings.Cut(line, " => ")
		if !ok {
			t.Fatalf("line %d: want turns => facts: %q", n, line)
		}
		c := conversationCase{line: n}
		for _, m := range strings.Split(turns, " >> ") {
			c.turns = append(c.turns, strings.TrimSpace(m))
		}
		for _, fact := range strings.Split(facts, " && ") {
			c.facts = append(c.facts, strings.TrimSpace(fact))
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The operator's conversation offline, on the compiled agent with the
// command's defaults (no model, writes off): follow-ups that replace one
// detail, comparisons, plots, counts, verdicts and actions the application
// does not offer are each answered right, turn after turn on one thread.
func TestOfflineConversationCorpus(t *testing.T) {
	for _, c := range readConversations(t) {
		t.Run(strconv.Itoa(c.line)+"_"+strings.Join(c.turns, " >> "), func(t *testing.T) {
			a, err := agent.New(agent.Config{Registry: plantRegistry(t)})
			if err != nil {
				t.Fatal(err)
			}
			var msg *state.Message
			var charts []capabilities.Artifact
			var plan []string
			for _, in := range c.turns {
				msg, charts, plan = nil, nil, nil
				for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "chat", Input: in}) {
					if err != nil {
						t.Fatalf("%q: %v", in, err)
					}
					switch ev.Type {
					case agent.EventMessage:
						msg = ev.Message
					case agent.EventArtifact:
						if ev.Artifact.Kind == capabilities.ArtifactTimeSeries {
							charts = append(charts, *ev.Artifact)
						}
					case agent.EventPlan:
						plan = nil
						for _, st := range ev.Plan.Steps {
							if st.Capability != state.NodeRespond {
								plan = append(plan, st.Capability)
							}
						}
					}
				}
				if msg == nil {
					t.Fatalf("%q: no message", in)
				}
			}
			if msg.Kind != state.KindAnswer || !strings.HasPrefix(msg.Content, nodes.OfflineNotice) {
				t.Fatalf("the last turn's message is a %s:\n%s", msg.Kind, msg.Content)
			}
			for _, f := range c.facts {
				switch {
				case strings.HasPrefix(f, "!"):
					if strings.Contains(msg.Content, f[1:]) {
						t.Errorf("the answer says %q:\n%s", f[1:], msg.Content)
					}
				case strings.HasPrefix(f, "chart:"):
					if len(charts) != 1 || !strings.Contains(charts[0].Title, strings.TrimPrefix(f, "chart:")) {
						t.Errorf("want one chart titled …%q…, got %d: %v", strings.TrimPrefix(f, "chart:"), len(charts), titles(charts))
					}
				case strings.HasPrefix(f, "series:"):
					n, _ := strconv.Atoi(strings.TrimPrefix(f, "series:"))
					if len(charts) != 1 || len(charts[0].TimeSeries.Series) != n {
						t.Errorf("want one chart of %d series, got %d charts: %v", n, len(charts), titles(charts))
					}
				case strings.HasPrefix(f, "plan:"):
					if got := strings.Join(plan, ","); got != strings.TrimPrefix(f, "plan:") {
						t.Errorf("plan %s, want %s", got, strings.TrimPrefix(f, "plan:"))
					}
				default:
					if !strings.Contains(msg.Content, f) {
						t.Errorf("the answer lacks %q:\n%s", f, msg.Content)
					}
				}
			}
		})
	}
}

func titles(arts []capabilities.Artifact) []string {
	var out []string
	for _, a := range arts {
		n := 0
		if a.TimeSeries != nil {
			n = len(a.TimeSeries.Series)
		}
		out = append(out, a.Title+" ("+strconv.Itoa(n)+" series)")
	}
	return out
}
