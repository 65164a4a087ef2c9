package main

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/examples/weather/weather"
)

// The example's eval set passes offline over a reliable service: every
// 503 a case meets is the one it injects, and each is retried as the
// capability's policy says.
func TestWeatherEvalSet(t *testing.T) {
	s, err := eval.Load("testdata/eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reliable := 0.0
	for _, run := range []struct {
		tags []string
		cfg  weather.ServiceConfig
	}{
		{[]string{"read", "fault", "missing"}, weather.ServiceConfig{FailureRate: &reliable}},
		{[]string{"flaky-service"}, weather.ServiceConfig{Seed: appSeed}},
	} {
		rep, err := eval.Run(context.Background(), s, eval.Target{
			Name: "weather offline",
			// A service per case run: the seed's 503s fall on the same requests every run.
			Registry: func(context.Context) (*capabilities.Registry, error) {
				svc, err := weather.NewService(run.cfg)
				if err != nil {
					return nil, err
				}
				t.Cleanup(func() { _ = svc.Close() })
				reg := capabilities.NewRegistry()
				return reg, reg.Register(weather.NewCapability(&weather.Client{BaseURL: svc.URL()}))
			},
			Config: agent.Config{},
		}, eval.Options{Tags: run.tags})
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Err(); err != nil {
			t.Fatal(err)
		}
		if len(rep.Cases) == 0 {
			t.Fatalf("no case tagged %v", run.tags)
		}
	}
}
