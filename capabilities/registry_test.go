package capabilities_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

func def(name string, provides []string, requires []string, fallbacks ...string) capabilities.Capability {
	var req []capabilities.Requirement
	for _, r := range requires {
		req = append(req, capabilities.Requirement{Type: r})
	}
	c := capabilities.Define(capabilities.Definition{Name: name, Description: "does " + name, Provides: provides, Requires: req, Fallbacks: fallbacks,
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	return c
}

func TestRegistryErrors(t *testing.T) {
	tests := []struct {
		name     string
		register []capabilities.Capability
		validate bool
		want     string
	}{
		{"duplicate", []capabilities.Capability{def("a", nil, nil), def("a", nil, nil)}, false, "registered twice"},
		{"bad name", []capabilities.Capability{def("Read PV", nil, nil)}, false, "lower_snake_case"},
		{"bad type", []capabilities.Capability{def("a", []string{"pv value"}, nil)}, false, "UPPER_SNAKE_CASE"},
		{"nil", []capabilities.Capability{nil}, false, "nil capability"},
		{"required type nobody provides", []capabilities.Capability{def("a", nil, []string{"PV_VALUE"})}, true, "no capability provides"},
		{"unknown fallback", []capabilities.Capability{def("a", nil, nil, "b")}, true, `fallback "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := capabilities.NewRegistry()
			err := r.Register(tc.register...)
			if tc.validate {
				if err != nil {
					t.Fatal(err)
				}
				err = r.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, capabilities.ErrInvalidCapability) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// Define reports nothing itself: Register reports every problem of every
// capability together, each naming its capability, and registers the good
// ones.
func TestRegisterReportsEveryProblemTogether(t *testing.T) {
	noRun := capabilities.Define(capabilities.Definition{Name: "no_run", Description: "has no Run"})
	good := def("good", []string{"GOOD"}, nil)
	r := capabilities.NewRegistry()
	err := r.Register(noRun, def("Bad Name", []string{"lower"}, nil), good, def("good", nil, nil),
		capabilities.Define(capabilities.Definition{Description: "nameless", Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}}))
	for _, want := range []string{`"no_run": has no Run function`, `"Bad Name": name must be lower_snake_case`,
		`"Bad Name": provides context type "lower"`, `"good": registered twice`, `"<unnamed: nameless>": has no name`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Register: %v\nwant %q", err, want)
		}
	}
	var re *capabilities.RegistrationError
	if !errors.As(err, &re) || !errors.Is(err, capabilities.ErrInvalidCapability) {
		t.Errorf("not a *RegistrationError: %T", err)
	}
	if got := r.Names(); len(got) != 1 || got[0] != "good" {
		t.Errorf("registered %v, want only good", got)
	}
	if _, err := noRun.Execute(context.Background(), capabilities.Step{}); err == nil {
		t.Error("a capability without Run ran")
	}
}
