package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/state"
)

// screen is a terminal of a fixed width, as far as the commands use one:
// printable characters (autowrapping at the right margin), carriage
// return, line feed and erase-to-end-of-line (ESC [ K). It records each
// autowrap with the row it broke, so a test can tell a wrapped status line
// (which a carriage return can no longer redraw or erase) from a long
// answer the terminal rightly wraps.
type screen struct {
	mu    sync.Mutex
	width int
	rows  [][]rune
	row   int
	col   int
	esc   string
	// wrapped holds the text of each row at the moment it autowrapped.
	wrapped []string
	// drawn counts erase-to-end-of-line sequences: status line draws.
	drawn int
}

func newScreen(width int) *screen { return &screen{width: width, rows: [][]rune{nil}} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range string(p) {
		if s.esc != "" || r == '\033' {
			s.esc += string(r)
			if len(s.esc) >= 2 && (r >= '@' && r <= '~') && s.esc != "\033[" {
				if s.esc == "\033[K" {
					s.rows[s.row] = s.rows[s.row][:min(s.col, len(s.rows[s.row]))]
					s.drawn++
				}
				s.esc = ""
			}
			continue
		}
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.newRow()
		default:
			w := runeWidth(r)
			if s.col+w > s.width {
				s.wrapped = append(s.wrapped, string(s.rows[s.row]))
				s.newRow()
			}
			line := s.rows[s.row]
			for len(line) < s.col {
				line = append(line, ' ')
			}
			cell := []rune{r}
			if w == 2 {
				cell = append(cell, 0) // the second half of a wide character
			}
			if s.col < len(line) {
				line = append(line[:s.col], append(cell, line[min(s.col+len(cell), len(line)):]...)...)
			} else {
				line = append(line, cell...)
			}
			s.rows[s.row] = line
			s.col += w
		}
	}
	return len(p), nil
}

func (s *screen) newRow() {
	s.row++
	s.col = 0
	if s.row == len(s.rows) {
		s.rows = append(s.rows, nil)
	}
}

// text is what the screen shows, row by row.
func (s *screen) text() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.rows))
	for i, r := range s.rows {
		out[i] = strings.TrimRight(strings.ReplaceAll(string(r), "\x00", ""), " ")
	}
	return out
}

// statusLike reports whether a row holds (part of) the live status line.
func statusLike(row string) bool {
	for _, sp := range spinner {
		if strings.HasPrefix(row, sp+" ") {
			return true
		}
	}
	for _, s := range []string{"retrying in", "approval needed", "• step ", "• planned", "• selected", "• task"} {
		if strings.Contains(row, s) {
			return true
		}
	}
	return false
}

// The status line never wraps, whatever its text (long retry reasons,
// approval summaries with line breaks, escape sequences, wide characters),
// and is gone from the screen after stop.
func TestLiveLineFitsTheTerminal(t *testing.T) {
	long := strings.Repeat("The control system did not answer within the timeout of the channel access gateway. ", 3)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	events := []agent.Event{
		{Type: agent.EventTask, Text: "Read every vacuum gauge of the storage ring and tell me which one is above 1e-8 mbar"},
		{Type: agent.EventCapabilities, Capabilities: []string{"channel_finding", "channel_read", "archiver_retrieval", "respond", "clarify"}},
		{Type: agent.EventStepStart, Step: 1, Total: 3, Capability: "channel_read_with_a_very_long_capability_name_for_the_test"},
		{Type: agent.EventRetry, Retry: &agent.RetryInfo{Capability: "channel_read", Step: 1, Attempt: 1, Max: 3, Reason: long, Delay: 1500 * time.Millisecond}},
		{Type: agent.EventApprovalRequired, Approval: &state.Approval{Summary: "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A\nand \033[31mSR:MAG:Q2\033[0m 電流 to 3 A " + long}},
	}
	for _, width := range []int{12, 20, 40, 80, 132} {
		scr := newScreen(width)
		w := width
		l := newLiveLine(scr, func() time.Time { return now }, func() int { return w })
		for i, e := range events {
			l.event(e)
			l.mu.Lock()
			l.draw(spinner[i%len(spinner)])
			l.mu.Unlock()
			if i == 2 {
				w = width / 2 // the terminal is made narrower while a turn runs
			}
		}
		l.stop()
		if len(scr.wrapped) > 0 {
			t.Errorf("width %d: the status line wrapped: %q", width, scr.wrapped)
		}
		for _, row := range scr.text() {
			if row != "" {
				t.Errorf("width %d: %q stays on the screen after stop", width, row)
			}
		}
	}
}

// A chat on a 40-column terminal: a retry whose reason is over 100
// characters and an approval request with a long summary. No copy of the
// status line is left on the screen (the issue: a wrapped copy per spinner
// frame, a cut "• approval needed: …" above the prompt).
func TestChatStatusLineOnANarrowTerminal(t *testing.T) {
	reason := "The flaky sensor did not answer within 2 s: the channel access gateway at 10.0.3.17:5064 reported a timeout on every request of this attempt"
	app := App{Name: "narrow", Capabilities: flakyApp(reason)}
	scr := newScreen(40)
	yes := true
	var errb strings.Builder
	code := app.Run(context.Background(), Env{
		Args:  []string{"--store", "memory", "chat"},
		Stdin: &typist{lines: []string{"read the flaky sensor", "check the valve", "no", "/exit"}, echo: scr}, Stdout: scr, Stderr: &errb,
		Terminal: &yes, Width: 40, Getenv: func(string) string { return "" },
	})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	rows := scr.text()
	all := strings.Join(rows, "\n")
	for _, want := range []string{"flaky sensor: 42", "Approval needed:", "approve? [yes/no]", "bye — resume with"} {
		if !strings.Contains(strings.Join(strings.Fields(all), " "), want) {
			t.Errorf("the screen lacks %q:\n%s", want, all)
		}
	}
	for _, w := range scr.wrapped {
		if statusLike(w) {
			t.Errorf("the status line wrapped: %q", w)
		}
	}
	for i, row := range rows {
		if statusLike(row) {
			t.Errorf("row %d keeps a copy of the status line: %q\n%s", i, row, all)
		}
	}
	if !strings.Contains(all, "you> read the flaky sensor") || !strings.Contains(all, "approve? [yes/no] no") {
		t.Errorf("the prompts are not on the screen:\n%s", all)
	}
}

// flakyApp is flaky_sensor, which fails its first attempt with reason
// (RETRIABLE) and then answers "flaky sensor: 42", and valve_check, which
// asks for approval with a long summary.
func flakyApp(reason string) func(*config.Config) ([]capabilities.Capability, error) {
	return func(*config.Config) ([]capabilities.Capability, error) {
		flaky := capabilities.Define(capabilities.Definition{
			Name: "flaky_sensor", Description: "Reads the flaky sensor.", Provides: []string{"READING"},
			Retry: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 400 * time.Millisecond,
				MaxInterval: 400 * time.Millisecond, Jitter: capabilities.JitterNone},
			Run: func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				if s.Attempt < 2 {
					return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, reason, nil)
				}
				return capabilities.Result("READING", 42.0, "flaky sensor: 42"), nil
			},
		})
		valve := capabilities.Define(capabilities.Definition{
			Name: "valve_check", Description: "Checks the valve of the beamline front end.", Provides: []string{"VALVE"},
			Approval: func(capabilities.Step) (bool, string) {
				return true, "check the front-end valve FE:VLV:01 of beamline 7, which closes the beam shutter for up to 30 seconds while the check runs"
			},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Result("VALVE", "ok", "valve ok"), nil
			},
		})
		return []capabilities.Capability{flaky, valve}, nil
	}
}

// typist types one line per read, echoed to the screen as a terminal does.
type typist struct {
	lines []string
	echo  *screen
}

func (ty *typist) Read(p []byte) (int, error) {
	if len(ty.lines) == 0 {
		return 0, io.EOF
	}
	line := ty.lines[0] + "\n"
	ty.lines = ty.lines[1:]
	fmt.Fprint(ty.echo, line)
	return copy(p, line), nil
}

// The answer shows on the status line from its first token (its latest
// words, cut to the terminal), before the whole answer is printed; a reset
// stream starts the line again; nothing stays after stop.
func TestLiveLineStreamsTheAnswer(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	scr := newScreen(40)
	l := newLiveLine(scr, func() time.Time { return now }, func() int { return 40 })
	l.event(agent.Event{Type: agent.EventToken, Text: "Q1 reads "})
	if row := scr.text()[0]; !strings.Contains(row, "answering: Q1 reads") {
		t.Fatalf("after the first token: %q", row)
	}
	for _, tok := range []string{"92.0 A, ", "within its normal range ", "of 90 to 95 A."} {
		l.event(agent.Event{Type: agent.EventToken, Text: tok})
	}
	row := scr.text()[0]
	if !strings.HasSuffix(strings.TrimSpace(row), "of 90 to 95 A.") || !strings.Contains(row, "answering: …") || len(scr.wrapped) > 0 {
		t.Fatalf("the latest words are not shown on one line: %q (wrapped %q)", row, scr.wrapped)
	}
	l.event(agent.Event{Type: agent.EventAnswerReset})
	if row := scr.text()[0]; !strings.Contains(row, "answering again") || strings.Contains(row, "95 A") {
		t.Fatalf("after a reset: %q", row)
	}
	l.stop()
	if row := scr.text()[0]; row != "" {
		t.Errorf("%q stays after stop", row)
	}
}
