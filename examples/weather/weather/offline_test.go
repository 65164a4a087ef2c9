package weather_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/examples/weather/weather"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/state"
)

// The offline strategies (no model at all) answer the example's demo
// questions with their facts.

func TestOfflineWeatherDemo(t *testing.T) {
	reliable := 0.0
	svc, err := weather.NewService(weather.ServiceConfig{FailureRate: &reliable, Now: func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	reg := capabilities.NewRegistry()
	if err := reg.Register(weather.NewCapability(&weather.Client{BaseURL: svc.URL()})); err != nil {
		t.Fatal(err)
	}
	for _, d := range weather.Demo {
		t.Run(d.Question, func(t *testing.T) {
			o := runTurn(t, agent.Config{Registry: reg}, d.Question)
			m := o.message()
			if m == nil || m.Kind != state.KindAnswer || !strings.HasPrefix(m.Content, nodes.OfflineNotice) {
				t.Fatalf("message %+v", m)
			}
			for _, f := range d.Facts {
				if !strings.Contains(m.Content, f) {
					t.Errorf("answer lacks %q:\n%s", f, m.Content)
				}
			}
		})
	}
}

// runTurn runs one turn on a new agent of cfg and returns its message.
func runTurn(t *testing.T, cfg agent.Config, input string) offlineTurn {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var o offlineTurn
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: input}) {
		if err != nil {
			t.Fatalf("turn failed: %v", err)
		}
		if ev.Type == agent.EventMessage {
			o.msg = ev.Message
		}
	}
	return o
}

type offlineTurn struct{ msg *state.Message }

func (o offlineTurn) message() *state.Message { return o.msg }
