package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
)

// progress shows what a turn is doing while it runs.
type progress interface {
	event(e agent.Event)
	// stop erases a live line before the answer is printed.
	stop()
}

// newProgress returns the live status line on a terminal, plain event
// lines otherwise.
func newProgress(env Env, terminal bool) progress {
	if terminal {
		return newLiveLine(env.Stdout, env.Now, env.width)
	}
	return &eventLines{w: env.Stderr}
}

// describe renders an event as a short line; "" for events not worth a line
// (tokens, node boundaries of infrastructure nodes, usage).
func describe(e agent.Event) string {
	switch e.Type {
	case agent.EventTask:
		return "task: " + e.Text
	case agent.EventCapabilities:
		return "capabilities: " + strings.Join(e.Capabilities, ", ")
	case agent.EventPlan:
		if e.Plan == nil {
			return ""
		}
		steps := make([]string, len(e.Plan.Steps))
		for i, s := range e.Plan.Steps {
			steps[i] = fmt.Sprintf("%d. %s", i+1, s.Capability)
		}
		return fmt.Sprintf("plan %d: %s", e.Plan.Number, strings.Join(steps, " → "))
	case agent.EventStepStart:
		return fmt.Sprintf("step %d of %d: %s", e.Step+1, e.Total, e.Capability)
	case agent.EventStepEnd:
		if e.Err != "" {
			return fmt.Sprintf("step %d of %d: %s failed: %s", e.Step+1, e.Total, e.Capability, e.Err)
		}
		return fmt.Sprintf("step %d of %d: %s done", e.Step+1, e.Total, e.Capability)
	case agent.EventRetry:
		if e.Retry == nil {
			return ""
		}
		r := e.Retry
		return fmt.Sprintf("retry: %s attempt %d of %d failed (%s); next attempt in %s", r.What(), r.Attempt, r.Max, r.Reason, r.Delay.Round(time.Millisecond))
	case agent.EventApprovalRequired:
		if e.Approval == nil {
			return "approval needed"
		}
		return "approval needed: " + e.Approval.Summary
	case agent.EventStatus:
		return e.Text
	case agent.EventDenied:
		return "refused: " + e.Text
	case agent.EventAudit:
		if e.Audit == nil || e.Audit.Outcome == "" {
			return ""
		}
		return fmt.Sprintf("step %d: %s — %s", e.Audit.Step+1, agent.OutcomeLabel(e.Audit.Outcome), agent.DescribeOutcome(*e.Audit))
	case agent.EventDone:
		if e.Err != "" {
			return fmt.Sprintf("done: %s (%s)", e.Status, e.Err)
		}
		return "done: " + string(e.Status)
	}
	return ""
}

// eventLines writes one plain line per notable event.
type eventLines struct{ w io.Writer }

func (p *eventLines) event(e agent.Event) {
	if s := describe(e); s != "" {
		fmt.Fprintln(p.w, "· "+oneLineText(s))
	}
}

func (p *eventLines) stop() {}

// liveLine keeps one status line up to date on a terminal: the current step
// (n of m) and capability, a retry countdown, or that approval is needed.
// The line is cut to the terminal's width: a line the terminal wrapped
// could not be redrawn or erased with a carriage return.
type liveLine struct {
	w     io.Writer
	now   func() time.Time
	width func() int

	mu       sync.Mutex
	text     string    // the current status
	retryAt  time.Time // when a scheduled retry starts (countdown)
	retryOf  string    // what is retried ("step 2 (channel_read)")
	retryMsg string    // why ("attempt 1 of 3 failed: …")
	shown    bool
	// answer is the answer streamed so far: the line shows its latest
	// words from the first token on (the whole answer, rendered, is
	// printed once it is complete: Markdown needs all of it).
	answer string
	done   chan struct{}
	once   sync.Once
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newLiveLine(w io.Writer, now func() time.Time, width func() int) *liveLine {
	l := &liveLine{w: w, now: now, width: width, text: "thinking", done: make(chan struct{})}
	go l.tick()
	return l
}

// tick redraws the line so the spinner turns and the countdown counts down
// while nothing else happens.
func (l *liveLine) tick() {
	t := time.NewTicker(150 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		case <-t.C:
			l.mu.Lock()
			l.draw(spinner[i%len(spinner)])
			l.mu.Unlock()
		}
	}
}

func (l *liveLine) draw(spin string) {
	text := l.text
	if !l.retryAt.IsZero() {
		left := l.retryAt.Sub(l.now())
		if left < 0 {
			left = 0
		}
		// The countdown comes first: a narrow terminal cuts the reason.
		text = fmt.Sprintf("%s retrying in %.1fs — %s", l.retryOf, left.Seconds(), l.retryMsg)
	}
	// One column is left free: a character in the last one puts some
	// terminals in a pending wrap that the next carriage return undoes
	// differently.
	fmt.Fprintf(l.w, "\r\033[K%s", fit(spin+" "+oneLineText(text), l.width()-1))
	l.shown = true
}

func (l *liveLine) event(e agent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e.Type {
	case agent.EventTask:
		l.text = "task: " + e.Text
	case agent.EventCapabilities:
		l.text = "selected " + strings.Join(e.Capabilities, ", ")
	case agent.EventPlan:
		if e.Plan != nil {
			l.text = fmt.Sprintf("planned %d steps", len(e.Plan.Steps))
		}
	case agent.EventStepStart:
		l.retryAt = time.Time{}
		l.text = fmt.Sprintf("step %d of %d: %s", e.Step+1, e.Total, e.Capability)
	case agent.EventNodeStart:
		if e.Capability == "" && e.Node != "" {
			l.retryAt = time.Time{}
			l.text = e.Node
		}
	case agent.EventRetry:
		if e.Retry != nil {
			l.retryOf = e.Retry.What()
			l.retryMsg = fmt.Sprintf("attempt %d of %d failed: %s", e.Retry.Attempt, e.Retry.Max, e.Retry.Reason)
			l.retryAt = e.Retry.NotBefore
			if l.retryAt.IsZero() {
				l.retryAt = l.now().Add(e.Retry.Delay)
			}
		}
	case agent.EventToken:
		l.retryAt = time.Time{}
		l.answer += e.Text
		if len(l.answer) > maxStatusAnswer {
			// Only the latest words are shown: keep their tail, not the whole answer.
			l.answer = strings.ToValidUTF8(l.answer[len(l.answer)-maxStatusAnswer:], "")
		}
		l.text = "answering: " + tail(oneLineText(l.answer), l.width()-16)
	case agent.EventAnswerReset:
		l.answer = ""
		l.text = "answering again"
	case agent.EventApprovalRequired:
		l.retryAt = time.Time{}
		l.text = "approval needed"
		if e.Approval != nil {
			l.text += ": " + e.Approval.Summary
		}
	default:
		return
	}
	l.draw("•")
}

func (l *liveLine) stop() {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		if l.shown {
			fmt.Fprint(l.w, "\r\033[K")
		}
		l.mu.Unlock()
	})
}

// maxStatusAnswer bounds the streamed answer the status line keeps (bytes):
// more than any terminal's width, so redrawing it per token stays cheap.
const maxStatusAnswer = 1024

// tail is the end of s in at most w columns, "…" before it when cut: the
// latest words of a streaming answer.
func tail(s string, w int) string {
	if displayWidth(s) <= w {
		return s
	}
	rs := []rune(s)
	n, i := 1, len(rs) // "…" takes one column
	for i > 0 && n+runeWidth(rs[i-1]) <= w {
		i--
		n += runeWidth(rs[i])
	}
	return "…" + string(rs[i:])
}
