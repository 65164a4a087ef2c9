package killtest

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Child describes one run of the test binary as a child process.
type Child struct {
	// Name prefixes the failure message when the child overruns Deadline
	// (e.g. "round 3").
	Name string
	// Env is added to the parent's environment ("KEY=value").
	Env []string
	// Kill: SIGKILL the child at a random moment; without it the child runs
	// to its end.
	Kill bool
	// EarlyOneIn: with Kill, one run in EarlyOneIn is killed a random
	// 0..EarlyWithin after start (while it opens its store), not after a
	// trigger line. Zero never kills early.
	EarlyOneIn  int
	EarlyWithin time.Duration
	// AfterTrigger: with Kill, the kill lands a random 0..AfterTrigger after
	// the first line for which Line returned true.
	AfterTrigger time.Duration
	// Deadline: the child must end within it, or the test fails.
	Deadline time.Duration
	// Line receives every stdout line in order; true makes it a trigger.
	Line func(line string) (trigger bool)
	// BeforeKill, if set, runs just before the SIGKILL is sent, so the caller
	// can note what the child was doing then.
	BeforeKill func()
}

// Result is how a child ended.
type Result struct {
	// Killed: the child died of the SIGKILL.
	Killed bool
	// Exit is cmd.Wait's error.
	Exit error
}

// Run starts the test binary (running no tests: its TestMain picks child mode
// from the environment), feeds its stdout lines to c.Line and kills it as c
// says. It fails t if the child cannot start or overruns c.Deadline.
func Run(t testing.TB, c Child) Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var (
		timer    <-chan time.Time
		sentKill bool
	)
	if c.Kill && c.EarlyOneIn > 0 && rand.IntN(c.EarlyOneIn) == 0 {
		timer = time.After(randUpTo(c.EarlyWithin))
	}
	deadline := time.After(c.Deadline)
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			if c.Line(line) && c.Kill && timer == nil && !sentKill {
				timer = time.After(randUpTo(c.AfterTrigger))
			}
		case <-timer:
			timer = nil
			if !sentKill {
				sentKill = true
				if c.BeforeKill != nil {
					c.BeforeKill()
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("%s: child did not finish within %s", c.Name, c.Deadline)
		}
	}
	var res Result
	res.Exit = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		res.Killed = true
	}
	return res
}

// randUpTo returns a random duration in [0, d) in whole milliseconds, as the
// tests always drew it.
func randUpTo(d time.Duration) time.Duration {
	ms := int(d / time.Millisecond)
	if ms <= 0 {
		return 0
	}
	return time.Duration(rand.IntN(ms)) * time.Millisecond
}
