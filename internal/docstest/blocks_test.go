package docstest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// marker is what the HTML comment before a fenced block says about it.
type marker struct {
	kind   string // run, output, file, compile, skip; "" when unmarked
	exit   int    // run: the last command's expected exit status
	input  []string
	not    []notRun
	needs  []string
	path   string // file
	reason string // skip
}

// notRun is a command of a run block that is not run, and why.
type notRun struct{ prefix, why string }

// block is one fenced block of a Markdown file.
type block struct {
	file string
	line int // of the opening fence
	info string
	text string
	mark marker
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var markerLine = regexp.MustCompile(`^<!--\s*test:\s*(.*?)\s*-->$`)

// parseBlocks returns the fenced blocks of a Markdown text, each with the
// marker of the comment before it. Fences may be indented (inside a list
// item); the block's lines lose that indentation.
func parseBlocks(file, text string) ([]block, error) {
	lines := strings.Split(text, "\n")
	var out []block
	pending := "" // the last marker comment, until a fence or other text
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if m := markerLine.FindStringSubmatch(trimmed); m != nil {
			pending, pendingLine = m[1], i+1
			continue
		}
		if !strings.HasPrefix(trimmed, "```") {
			if trimmed != "" && pending != "" {
				return nil, fmt.Errorf("%s:%d: a test marker not followed by a fenced block", file, pendingLine)
			}
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		b := block{file: file, line: i + 1, info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				break
			}
			l := lines[j]
			if len(l)-len(strings.TrimLeft(l, " ")) >= indent {
				l = l[indent:]
			}
			body = append(body, l)
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: a fenced block is not closed", file, i+1)
		}
		b.text = strings.Join(body, "\n") + "\n"
		if pending != "" {
			mk, err := parseMarker(pending)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", file, pendingLine, err)
			}
			b.mark = mk
		}
		pending = ""
		out = append(out, b)
		i = j
	}
	return out, nil
}

// parseMarker parses "run; exit 1; input "a" "b"; not CMD: WHY", "output",
// "file PATH", "compile", "skip: WHY".
func parseMarker(s string) (marker, error) {
	var m marker
	parts := strings.Split(s, ";")
	head := strings.TrimSpace(parts[0])
	switch {
	case head == "run" || head == "output" || head == "compile" || head == "bench":
		m.kind = head
	case strings.HasPrefix(head, "file "):
		m.kind, m.path = "file", strings.TrimSpace(strings.TrimPrefix(head, "file "))
	case strings.HasPrefix(head, "skip:"):
		m.kind, m.reason = "skip", strings.TrimSpace(strings.TrimPrefix(head, "skip:"))
		if m.reason == "" {
			return m, fmt.Errorf("skip needs a reason")
		}
		// A reason may hold semicolons.
		if len(parts) > 1 {
			m.reason += ";" + strings.Join(parts[1:], ";")
		}
		return m, nil
	default:
		return m, fmt.Errorf("unknown test marker %q (run, output, file PATH, compile, bench, skip: WHY)", head)
	}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if m.kind != "run" {
			return m, fmt.Errorf("%q: only run takes options", p)
		}
		switch {
		case strings.HasPrefix(p, "exit "):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(p, "exit ")))
			if err != nil {
				return m, fmt.Errorf("%q: exit wants a number", p)
			}
			m.exit = n
		case strings.HasPrefix(p, "input "):
			in, err := quoted(strings.TrimPrefix(p, "input "))
			if err != nil {
				return m, err
			}
			m.input = in
		case strings.HasPrefix(p, "not "):
			cmd, why, ok := strings.Cut(strings.TrimPrefix(p, "not "), ": ")
			if !ok || strings.TrimSpace(why) == "" {
				return m, fmt.Errorf("%q: want not COMMAND: WHY", p)
			}
			m.not = append(m.not, notRun{strings.TrimSpace(cmd), why})
		case strings.HasPrefix(p, "needs "):
			m.needs = append(m.needs, strings.Fields(strings.TrimPrefix(p, "needs "))...)
		default:
			return m, fmt.Errorf("unknown run option %q", p)
		}
	}
	return m, nil
}

// quoted parses a list of double-quoted strings.
func quoted(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] != '"' {
			return nil, fmt.Errorf("input: want quoted lines, got %q", s)
		}
		end := 1
		for end < len(s) && (s[end] != '"' || s[end-1] == '\\') {
			end++
		}
		if end == len(s) {
			return nil, fmt.Errorf("input: unterminated %q", s)
		}
		v, err := strconv.Unquote(s[:end+1])
		if err != nil {
			return nil, fmt.Errorf("input: %v", err)
		}
		out = append(out, v)
		s = s[end+1:]
	}
	return out, nil
}

var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// commands splits a shell block into commands: a line with the lines a
// trailing backslash continues and the body of a heredoc it opens.
// Comment lines and blank lines are dropped.
func commands(text string) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		cmd := l
		for strings.HasSuffix(strings.TrimRight(cmd, " "), "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		if m := heredoc.FindStringSubmatch(cmd); m != nil {
			for i+1 < len(lines) {
				i++
				cmd += "\n" + lines[i]
				if strings.TrimSpace(lines[i]) == m[1] {
					break
				}
			}
		}
		out = append(out, cmd)
	}
	return out
}

// matchOutput checks that each non-blank line of want matches a line of
// got, in order; it returns the first line that does not.
func matchOutput(want, got string) (string, bool) {
	gl := strings.Split(got, "\n")
	k := 0
	for _, w := range strings.Split(want, "\n") {
		w = strings.TrimRight(w, " \t")
		if strings.TrimSpace(w) == "" {
			continue
		}
		for ; k < len(gl); k++ {
			if lineMatches(w, strings.TrimRight(gl[k], " \t")) {
				break
			}
		}
		if k == len(gl) {
			return w, false
		}
		k++
	}
	return "", true
}

// lineMatches matches one line, "…" standing for any text.
func lineMatches(want, got string) bool {
	parts := strings.Split(want, "…")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	rest := got[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}

// echoInput shows each input line after the prompt that read it, as a
// terminal echoes what is typed.
func echoInput(out string, input []string) string {
	var b strings.Builder
	for len(input) > 0 {
		i, p := firstPrompt(out)
		if i < 0 {
			break
		}
		b.WriteString(out[:i+len(p)])
		b.WriteString(input[0] + "\n")
		out, input = out[i+len(p):], input[1:]
	}
	b.WriteString(out)
	return b.String()
}

var prompts = []string{"you> ", "approve? [yes/no] "}

func firstPrompt(s string) (int, string) {
	best, which := -1, ""
	for _, p := range prompts {
		if i := strings.Index(s, p); i >= 0 && (best < 0 || i < best) {
			best, which = i, p
		}
	}
	return best, which
}
