package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin wherever the tests run

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// webEnv serves the page over a real agent (offline, SQLite) whose
// capabilities cover what the page shows: a read (read_beam_current), a
// write that asks for approval and reads back (set_q1), a scan slow enough
// to be stopped (slow_scan), a gauge whose controller is down (a CRITICAL
// failure: the error card) and a flaky archive that needs a retry. The
// response model is the scripted LLM for one question (a Markdown table, as
// models write it, with reasoning and hostile HTML the page must not run);
// for every other question the model is unreachable and the agent answers
// offline.
type webEnv struct {
	*testEnv
	agent *agent.Agent
	plant *q1Plant
	scans *scanCounter
}

type scanCounter struct {
	mu       sync.Mutex
	started  int
	canceled int
}

// markdownAnswer is what the scripted model answers to "… as a table …".
const markdownAnswer = "<think>The user wants a table; the context has the beam current.</think>" +
	"Here are the **readings** you asked for:\n\n" +
	"| Channel | Value | Units |\n|---|---:|---|\n| SR:DCCT:CURRENT | 401.5 | mA |\n| SR:DCCT:LIFETIME | 9.8 | h |\n\n" +
	"- checked at `10:32`\n- source: [archiver](https://archiver.example.org/plot)\n\n" +
	"![lifetime plot](https://tracker.example.org/plot.png)\n\n" +
	"<img src=\"https://tracker.example.org/pixel.png\" onerror=\"document.body.dataset.pwned=1\">" +
	"<script>document.body.dataset.pwned=1</script>"

func newWebEnv(t *testing.T) *webEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(t.TempDir(), "capgraph.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	p := &q1Plant{}
	scans := &scanCounter{}
	slow := capabilities.Define(capabilities.Definition{
		Name: "slow_scan", Description: "Run a slow orbit scan of the storage ring", Provides: []string{"ORBIT_SCAN"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to run an orbit scan.",
			Examples: []capabilities.ClassifierExample{{Query: "run a slow orbit scan", Result: true, Reason: "asks for a scan"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			scans.mu.Lock()
			scans.started++
			scans.mu.Unlock()
			select {
			case <-ctx.Done():
				scans.mu.Lock()
				scans.canceled++
				scans.mu.Unlock()
				return capabilities.Output{}, ctx.Err()
			case <-time.After(2 * time.Minute):
				return capabilities.Result("ORBIT_SCAN", "done", "scan finished"), nil
			}
		},
	})
	gauge := capabilities.Define(capabilities.Definition{
		Name: "read_vacuum_gauge", Description: "Read the vacuum gauge pressure of sector 5", Provides: []string{"VACUUM"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for the vacuum gauge pressure.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the vacuum gauge pressure?", Result: true, Reason: "asks for the gauge"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, capabilities.NewError(capabilities.Critical, capabilities.KindConnection,
				"the gauge controller of sector 5 does not answer", errors.New("dial tcp 10.0.5.17:5064: connect: no route to host"))
		},
	})
	var archiveCalls int
	var amu sync.Mutex
	archive := capabilities.Define(capabilities.Definition{
		Name: "read_lifetime_archive", Description: "Read the archived beam lifetime of the last hour", Provides: []string{"LIFETIME_HISTORY"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for the beam lifetime history.",
			Examples: []capabilities.ClassifierExample{{Query: "how did the beam lifetime change in the last hour?", Result: true, Reason: "asks for history"}}},
		Retry: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 300 * time.Millisecond, Jitter: capabilities.JitterNone},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			amu.Lock()
			archiveCalls++
			n := archiveCalls
			amu.Unlock()
			if n%2 == 1 {
				return capabilities.Output{}, fmt.Errorf("archiver appliance: %w", context.DeadlineExceeded)
			}
			return capabilities.Result("LIFETIME_HISTORY", map[string]any{"samples": 60, "min_h": 9.6, "max_h": 10.1}, "beam lifetime over the last hour: 60 samples, 9.6 to 10.1 h"), nil
		},
	})
	history := capabilities.Define(capabilities.Definition{
		Name: "read_rf_history", Description: "Retrieve the archived RF cavity voltages over the last 2 hours", Provides: []string{"RF_HISTORY"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for the history of the RF cavity voltages.",
			Examples: []capabilities.ClassifierExample{{Query: "Show me the RF cavity voltage over the last 2 hours", Result: true, Reason: "asks for archived values"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return rfHistory(time.Now()), nil
		},
	})
	m := llmtest.New().On(llmtest.All(llmtest.RoleIs(llm.RoleResponse), llmtest.PromptContains("as a table")), func(llm.Request) llmtest.Reply {
		return llmtest.Stream(splitChunks(markdownAnswer, 24)...)
	}).On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply {
		return llmtest.Fail(fmt.Errorf("%w: connection refused", llm.ErrOffline))
	}).Only(llm.RoleResponse)
	a, err := agent.New(agent.Config{Registry: newRegistry(t, readBeamCurrent(t), p.capability(t), slow, gauge, archive, history), Store: store, Models: m,
		Options: state.Options{WritesEnabled: true, ApprovalMode: state.ApprovalModeSelective}})
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) {
		c.Runner = a
		c.Examples = []string{"What is the beam current?", "Set the Q1 current to 105 A"}
		// An application's own page: its name, its logo, its clock
		// (web.test.mjs, "the application's name, logo and clock").
		c.Page = Page{Name: "Control Room", Logo: []byte(webLogo), LogoType: "image/svg+xml", TimeZone: berlin}
	})
	return &webEnv{testEnv: env, agent: a, plant: p, scans: scans}
}

// webLogo is the test application's logo: a ring with a bunch in it.
const webLogo = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24">` +
	`<circle cx="12" cy="12" r="9" fill="none" stroke="#0f766e" stroke-width="3"/><circle cx="12" cy="3" r="2.5" fill="#f59e0b"/></svg>`

// The archive of four RF cavity voltages: 120 samples each, one a minute
// up to now, as an archiver returns them; the time series and a table of
// the last values are the step's artifacts.
var rfChannels = []string{"SR:RF:CAV1:VOLT", "SR:RF:CAV2:VOLT", "SR:RF:CAV3:VOLT", "SR:RF:CAV4:VOLT"}

const rfSamples = 120

func rfHistory(now time.Time) capabilities.Output {
	end := now.Truncate(time.Minute)
	var series []capabilities.Series
	rows := make([][]any, 0, len(rfChannels))
	var summary []string
	for c, name := range rfChannels {
		s := capabilities.Series{Name: name, Units: "kV"}
		for i := range rfSamples {
			v := math.Round((600+1.5*float64(c)+1.2*math.Sin(float64(i)/9+float64(c)))*10) / 10
			s.Add(end.Add(time.Duration(i-rfSamples+1)*time.Minute), v)
		}
		series = append(series, s)
		last := s.Values[len(s.Values)-1]
		rows = append(rows, []any{name, last, s.Time(len(s.Values) - 1).Format("15:04 UTC")})
		summary = append(summary, fmt.Sprintf("%s: %d samples, last %.1f kV", name, rfSamples, last))
	}
	return capabilities.Result("RF_HISTORY", map[string]any{"channels": rfChannels, "samples": rfSamples}, strings.Join(summary, "; ")).With(
		capabilities.NewTimeSeries("RF cavity voltages, last 2 hours", series...),
		capabilities.NewTable("Last archived values", []capabilities.Column{{Name: "Channel"}, {Name: "Value", Units: "kV"}, {Name: "Time"}}, rows...))
}

// splitChunks cuts s into chunks of n bytes (at rune boundaries), as a
// model streams.
func splitChunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
