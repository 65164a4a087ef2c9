package config_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/config"
)

// control_system.targets is checked with the file's lines: approval none
// only on a simulated target, a known default target, a name that is a word.
func TestTargetsValidation(t *testing.T) {
	good := "control_system:\n  target: live\n  targets:\n    live:\n      writes_enabled: true\n    simulator:\n      simulated: true\n      approval: none\n      max_writes_per_turn: 3\n"
	c, err := config.Parse([]byte(good), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.ControlSystem.Targets["simulator"]; !s.Simulated || s.Approval != "none" || s.MaxWritesPerTurn != 3 || c.ControlSystem.Target != "live" {
		t.Fatalf("parsed %+v", c.ControlSystem)
	}
	for yaml, want := range map[string]string{
		"control_system:\n  target: live\n  targets:\n    live:\n      approval: none\n":                                            "line 5: control_system.targets.live.approval: none is only allowed with simulated: true",
		"control_system:\n  target: moon\n  targets:\n    live:\n      writes_enabled: true\n":                                      "control_system.target: must name the default target, one of live",
		"control_system:\n  target: live\n":                                                                                         "control_system.target: names \"live\" but control_system.targets is empty",
		"control_system:\n  target: live\n  targets:\n    live:\n      approval: sometimes\n":                                       "control_system.targets.live.approval: must be always or none",
		"control_system:\n  target: live\n  targets:\n    live:\n      max_writes_per_turn: -1\n":                                   "must not be negative",
		"control_system:\n  target: live\n  targets:\n    live:\n      writes_enabled: true\n    Big Sim:\n      simulated: true\n": "is not a target name",
	} {
		_, err := config.Parse([]byte(yaml), "t.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", yaml, err, want)
		}
	}
}
