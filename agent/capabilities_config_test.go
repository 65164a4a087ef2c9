package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

// Config.Capabilities takes the list directly; New reports every problem
// of every capability together, each naming its capability, as a
// *ConfigError (errors.Is ErrConfig) whose cause is the
// *capabilities.RegistrationError.
func TestNewReportsEveryCapabilityProblemTogether(t *testing.T) {
	run := func(context.Context, capabilities.Step) (capabilities.Output, error) {
		return capabilities.Output{}, nil
	}
	caps := []capabilities.Capability{
		capabilities.Define(capabilities.Definition{Name: "no_run", Description: "Has no Run"}),
		capabilities.Define(capabilities.Definition{Name: "Read PV", Description: "Bad name", Run: run}),
		capabilities.Define(capabilities.Definition{Name: "reader", Description: "Reads", Provides: []string{"VALUE"}, Run: run}),
		capabilities.Define(capabilities.Definition{Name: "reader", Description: "Reads again", Run: run}),
		capabilities.Define(capabilities.Definition{Name: "needy", Description: "Needs", Requires: []capabilities.Requirement{{Type: "NOBODY"}}, Run: run}),
		capabilities.Define(capabilities.Definition{Name: "bad_retry", Description: "Retries oddly", Run: run, Retry: capabilities.RetryPolicy{BackoffCoefficient: 0.5}}),
	}
	_, err := agent.New(agent.Config{Capabilities: caps})
	if !errors.Is(err, agent.ErrConfig) {
		t.Fatalf("New: %v, want ErrConfig", err)
	}
	for _, want := range []string{`"no_run": has no Run function`, `"Read PV": name must be lower_snake_case`, `"reader": registered twice`,
		`"needy": requires NOBODY, which no capability provides`, `"bad_retry": retry policy: backoff_coefficient must be at least 1`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v\nwant %q", err, want)
		}
	}
	var re *capabilities.RegistrationError
	if !errors.As(err, &re) {
		t.Errorf("no *capabilities.RegistrationError in %v", err)
	}
	reg := capabilities.NewRegistry()
	if _, err := agent.New(agent.Config{Capabilities: caps[2:3], Registry: reg}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("Capabilities and Registry both: %v", err)
	}
	if _, err := agent.New(agent.Config{}); err == nil || !strings.Contains(err.Error(), "Capabilities") {
		t.Errorf("no capabilities: %v", err)
	}
}
