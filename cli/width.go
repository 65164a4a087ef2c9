package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/term"
)

// defaultWidth is the width assumed when the terminal does not say (output
// to a file or a pipe, a terminal that answers nothing).
const defaultWidth = 80

// width returns the columns available on the command's stdout: Env.Width,
// else the terminal's, else $COLUMNS, else defaultWidth. It is asked again
// at every redraw, so a resized terminal is followed.
func (e Env) width() int {
	if e.Width > 0 {
		return e.Width
	}
	if f, ok := e.Stdout.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if w, err := strconv.Atoi(e.Getenv("COLUMNS")); err == nil && w > 0 {
		return w
	}
	return defaultWidth
}

// isTerminal reports whether w is an interactive terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runeWidth is the columns a rune takes on a terminal: 0 for combining
// marks, 2 for East Asian wide characters and emoji, else 1.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), r == '\u200b':
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
		r >= 0xffe0 && r <= 0xffe6, r >= 0x1f300 && r <= 0x1faff, r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

// displayWidth is the columns s takes on a terminal.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// oneLineText makes text safe for one terminal line: line breaks, tabs and
// other control characters (an escape sequence in an error message) become
// spaces, runs of spaces one.
func oneLineText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// fit cuts s to at most w columns, ending it with "…" when cut.
func fit(s string, w int) string {
	if displayWidth(s) <= w {
		return s
	}
	if w <= 0 {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		rw := runeWidth(r)
		if n+rw > w-1 {
			break
		}
		b.WriteRune(r)
		n += rw
	}
	return strings.TrimRight(b.String(), " ") + "…"
}

// wrap breaks s into lines of at most w columns at spaces; a word longer
// than a line is cut.
func wrap(s string, w int) []string {
	if w < 1 {
		w = 1
	}
	var lines []string
	line, n := "", 0
	for _, word := range strings.Fields(s) {
		ww := displayWidth(word)
		for ww > w {
			// A word longer than a line: fill the line, go on with the rest.
			if n > 0 {
				lines = append(lines, line)
				line, n = "", 0
			}
			head, rest := splitAt(word, w)
			lines = append(lines, head)
			word, ww = rest, displayWidth(rest)
		}
		switch {
		case n == 0:
			line, n = word, ww
		case n+1+ww <= w:
			line, n = line+" "+word, n+1+ww
		default:
			lines = append(lines, line)
			line, n = word, ww
		}
	}
	if n > 0 || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// splitAt splits s after at most w columns, after its last '/' there if
// it has one ("limit_violation/writes_disabled/…" breaks between kinds).
func splitAt(s string, w int) (string, string) {
	n := 0
	for i, r := range s {
		if n+runeWidth(r) > w {
			if j := strings.LastIndexByte(s[:i], '/'); j > 0 {
				i = j + 1
			}
			return s[:i], s[i:]
		}
		n += runeWidth(r)
	}
	return s, ""
}
