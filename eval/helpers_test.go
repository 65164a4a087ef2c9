package eval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/eval"
)

// fixture is a two-capability application: find a channel, read it.
func fixture(t *testing.T) *capabilities.Registry {
	t.Helper()
	find := capabilities.Define(capabilities.Definition{
		Name: "find_channel", Description: "find the channel of a device such as the beam current",
		Provides: []string{"CHANNEL"},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("CHANNEL", "SR:CURRENT", "channel SR:CURRENT"), nil
		},
	})
	read := capabilities.Define(capabilities.Definition{
		Name: "read_value", Description: "read the current value of a channel such as the beam current",
		Provides: []string{"VALUE"}, Requires: []capabilities.Requirement{{Type: "CHANNEL"}},
		Retry: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 1e6, Jitter: capabilities.JitterNone},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("VALUE", 500.7, "SR:CURRENT = 500.7 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(find, read); err != nil {
		t.Fatal(err)
	}
	return reg
}

func target(t *testing.T) eval.Target {
	reg := fixture(t)
	return eval.Target{Name: "fixture", Config: agent.Config{Registry: reg}}
}

func parse(t *testing.T, yaml string) *eval.Suite {
	t.Helper()
	s, err := eval.ParseYAML("cases.yaml", []byte(strings.TrimLeft(yaml, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, s *eval.Suite, tg eval.Target, opts eval.Options) *eval.Report {
	t.Helper()
	rep, err := eval.Run(context.Background(), s, tg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
