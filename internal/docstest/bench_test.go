//go:build unix

package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// reporter is what the checks need of a *testing.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
}

var benchFunc = regexp.MustCompile(`(?m)^func (Benchmark\w*)\(`)

// checkBench checks a block of benchmark commands without running them:
// each `go test` names packages that exist and a -bench pattern that
// matches one of their benchmarks, each `go run` a program that exists.
// `cd DIR` moves the next commands (as it does in a terminal).
func checkBench(t reporter, repo string, b block) {
	t.Helper()
	dir := repo
	for _, c := range commands(b.text) {
		for _, part := range strings.Split(comment.ReplaceAllString(strings.ReplaceAll(c, "\\\n", " "), ""), "&&") {
			words := strings.Fields(part)
			switch {
			case len(words) == 0, words[0] == "source":
			case words[0] == "cd" && len(words) == 2:
				dir = filepath.Join(dir, words[1])
				if _, err := os.Stat(dir); err != nil {
					t.Errorf("%s: cd %s: %v", b, words[1], err)
				}
			case len(words) > 2 && words[0] == "go" && words[1] == "run":
				if !hasGo(filepath.Join(dir, words[2]), false) {
					t.Errorf("%s: go run %s: no such program", b, words[2])
				}
			case len(words) > 2 && words[0] == "go" && words[1] == "test":
				checkGoTest(t, b, dir, words[2:])
			default:
				t.Errorf("%s: %q is not a benchmark command (go test -bench, go run, cd, source)", b, strings.TrimSpace(part))
			}
		}
	}
}

func checkGoTest(t reporter, b block, dir string, args []string) {
	t.Helper()
	var pkgs []string
	pattern := ""
	for i := 0; i < len(args); i++ {
		a := strings.Trim(args[i], `'"`)
		switch {
		case a == "-bench" && i+1 < len(args):
			pattern = strings.Trim(args[i+1], `'"`)
			i++
		case strings.HasPrefix(a, "-bench="):
			pattern = strings.Trim(strings.TrimPrefix(a, "-bench="), `'"`)
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "./"):
			i++ // a flag's value (-run '^$', -count 3)
		}
	}
	if pattern == "" || len(pkgs) == 0 {
		t.Errorf("%s: go test %s: want packages and -bench", b, strings.Join(args, " "))
		return
	}
	top, _, _ := strings.Cut(pattern, "/")
	re, err := regexp.Compile(top)
	if err != nil {
		t.Errorf("%s: -bench %q: %v", b, pattern, err)
		return
	}
	found := false
	for _, p := range pkgs {
		d := filepath.Join(dir, p)
		if !hasGo(d, true) {
			t.Errorf("%s: go test %s: no such package with tests", b, p)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d, "*_test.go"))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range benchFunc.FindAllStringSubmatch(string(src), -1) {
				found = found || re.MatchString(m[1])
			}
		}
	}
	if !found {
		t.Errorf("%s: -bench %q matches no benchmark of %s", b, pattern, strings.Join(pkgs, " "))
	}
}

// hasGo reports whether dir holds Go files (test files, with tests).
func hasGo(dir string, tests bool) bool {
	pattern := "*.go"
	if tests {
		pattern = "*_test.go"
	}
	files, _ := filepath.Glob(filepath.Join(dir, pattern))
	return len(files) > 0
}
