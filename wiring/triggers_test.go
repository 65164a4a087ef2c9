package wiring_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/wiring"
)

// A trigger's or a schedule's principal must name an API key: its runs
// are that key's. Naming none is a problem at the principal's line, from
// the server's configuration and from `config check` alike; naming a key
// is accepted.
func TestPrincipalNamesAKey(t *testing.T) {
	for _, kind := range []struct{ file, key string }{
		{`store: memory
triggers:
  beam_alarm:
    secret_env: ALARM_SECRET
    input: "Alarm {{.alarm}}"
    principal: %s
`, "triggers.beam_alarm.principal"},
		{`store: memory
schedules:
  morning_beam:
    cron: "0 7 * * *"
    input: What is the beam current?
    principal: %s
`, "schedules.morning_beam.principal"},
	} {
		env := map[string]string{"ALARM_SECRET": "0123456789abcdef-alarm", wiring.EnvAPIKeys: "ops=0123456789abcdef-ops"}
		for _, tc := range []struct{ principal, bad string }{{"ops", ""}, {"carol", "carol"}} {
			t.Run(kind.key+"="+tc.principal, func(t *testing.T) {
				cfg, err := config.Parse([]byte(strings.Replace(kind.file, "%s", tc.principal, 1)), "capgraph.yaml")
				if err != nil {
					t.Fatal(err)
				}
				rt, err := wiring.New(cfg, wiring.App{Name: "beamline", Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
					return nil, nil
				}}, wiring.Options{Getenv: func(k string) string { return env[k] }})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				_, err = rt.ServerConfig(context.Background(), logging.Nop())
				problems := rt.Check(context.Background())
				var ce *config.Error
				switch {
				case tc.bad == "" && (err != nil || len(problems) != 0):
					t.Fatalf("refused: %v %v", err, problems)
				case tc.bad != "" && (!errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Line != 6 || !strings.Contains(err.Error(), tc.bad)):
					t.Fatalf("serve: %v, want a problem at line 6 naming %s", err, tc.bad)
				case tc.bad != "" && (len(problems) != 1 || problems[0].Line != 6 || problems[0].Key != kind.key):
					t.Fatalf("check: %v, want one problem at line 6", problems)
				}
			})
		}
	}
}
