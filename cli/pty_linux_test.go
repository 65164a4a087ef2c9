package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of the given size: the master side (what
// a terminal emulator reads) and the slave side (the program's terminal).
func openPTY(t *testing.T, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// On a real terminal (a pseudo-terminal 50 columns wide) the command finds
// out by itself that it is a terminal and how wide it is: the status line
// of a turn with a long retry reason never wraps and is gone before the
// answer.
func TestStatusLineOnAPseudoTerminal(t *testing.T) {
	master, slave := openPTY(t, 50, 24)
	scr := newScreen(50)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		r := bufio.NewReader(master)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	reason := strings.Repeat("the gateway did not answer in time; ", 4)
	app := App{Name: "pty", Capabilities: flakyApp(reason)}
	var errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := app.Run(ctx, Env{Args: []string{"--store", "memory", "run", "read the flaky sensor"}, Stdout: slave, Stderr: &errb,
		Getenv: func(string) string { return "" }}) // Terminal and Width: nil and 0, asked of the terminal
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	slave.Close()
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		// The master keeps reading until every slave is closed; what was
		// written is on the screen by now.
	}
	all := strings.Join(scr.text(), "\n")
	if !strings.Contains(all, "flaky sensor: 42") {
		t.Fatalf("no answer on the terminal:\n%s", all)
	}
	scr.mu.Lock()
	drawn := scr.drawn
	scr.mu.Unlock()
	if drawn == 0 {
		t.Errorf("no status line was drawn: the terminal was not detected\n%s", all)
	}
	for _, w := range scr.wrapped {
		if statusLike(w) {
			t.Errorf("the status line wrapped at 50 columns: %q", w)
		}
	}
	for _, row := range scr.text() {
		if statusLike(row) {
			t.Errorf("a copy of the status line stays: %q", row)
		}
	}
}
