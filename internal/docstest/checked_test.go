package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checkedLine marks a Go fragment in the docs that is the body of an
// example function, compiled and run with its output by go test:
// <!-- checked: ExampleName in path/to/example_test.go -->.
var checkedLine = regexp.MustCompile(`^<!--\s*checked:\s*(Example\w*) in (\S+_test\.go)\s*-->$`)

// A fragment marked "checked" appears line for line (indentation aside) in
// the example function it names, so the docs show code that compiles and
// runs: TestDocsCheckedFragments fails when the two drift apart.
func TestDocsCheckedFragments(t *testing.T) {
	repo := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			m := checkedLine.FindStringSubmatch(strings.TrimSpace(lines[i]))
			if m == nil {
				continue
			}
			found++
			where := filepath.Base(doc) + ":" + strconv.Itoa(i+1)
			if i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```go") {
				t.Errorf("%s: a checked marker not followed by a Go block", where)
				continue
			}
			var fragment []string
			j := i + 2
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
				fragment = append(fragment, strings.TrimSpace(lines[j]))
			}
			src, err := os.ReadFile(filepath.Join(repo, m[2]))
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			body := functionBody(string(src), m[1])
			if body == nil {
				t.Errorf("%s: no func %s in %s", where, m[1], m[2])
				continue
			}
			if !containsLines(body, fragment) {
				t.Errorf("%s: the fragment is not the code of %s in %s:\n%s", where, m[1], m[2], strings.Join(fragment, "\n"))
			}
			i = j
		}
	}
	if found == 0 {
		t.Fatal("no checked fragment in the docs (writing-capabilities.md shows one)")
	}
}

// capabilityCode marks a Go fragment that builds a capability (or, through
// an MCP server, several).
var capabilityCode = regexp.MustCompile(`capabilities\.(New|Define)\(|mcp\.Connect\(`)

// maxCapabilityLines is what a capability's code takes at most in
// writing-capabilities.md, its parameters' struct and key included (issue
// 30: the reviewer's 48-line capability in at most 15).
const maxCapabilityLines = 15

// Every capability writing-capabilities.md shows is an example's code,
// checked (TestDocsCheckedFragments) and run on the compiled agent with
// its output, and takes at most maxCapabilityLines lines: a capability
// written only in the page could drift from the API unseen.
func TestDocsCapabilitiesAreExamples(t *testing.T) {
	doc := filepath.Join(repoRoot(t), "docs", "writing-capabilities.md")
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	fragments := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "```go") {
			continue
		}
		start := i
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			if strings.TrimSpace(lines[i]) != "" {
				code = append(code, lines[i])
			}
		}
		if !capabilityCode.MatchString(strings.Join(code, "\n")) {
			continue
		}
		fragments++
		where := "writing-capabilities.md:" + strconv.Itoa(start+1)
		if start == 0 || !checkedLine.MatchString(strings.TrimSpace(lines[start-1])) {
			t.Errorf("%s: a capability's code not marked <!-- checked: ExampleName in path_test.go --> (make it an example's body)", where)
		}
		if len(code) > maxCapabilityLines {
			t.Errorf("%s: the capability's code takes %d lines, more than %d", where, len(code), maxCapabilityLines)
		}
	}
	if fragments < 7 {
		t.Errorf("writing-capabilities.md shows %d capabilities; the use cases are a read with a retry policy, plain fields, a custom classification, a fallback, a write with approval, a write with readback and an MCP tool", fragments)
	}
}

// functionBody returns the trimmed lines of func name, up to the closing
// brace at the start of a line.
func functionBody(src, name string) []string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "func "+name+"(") {
			var out []string
			for _, b := range lines[i+1:] {
				if b == "}" {
					return out
				}
				out = append(out, strings.TrimSpace(b))
			}
		}
	}
	return nil
}

// containsLines reports whether want appears as consecutive lines of have.
func containsLines(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		ok := true
		for k := range want {
			if have[i+k] != want[k] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
