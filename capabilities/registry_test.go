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
	c, _ := capabilities.Define(capabilities.Definition{Name: name, Description: "does " + name, Provides: provides, Requires: req, Fallbacks: fallbacks,
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
	if _, err := capabilities.Define(capabilities.Definition{Name: "x"}); err == nil {
		t.Fatal("Define without Run succeeded")
	}
}
