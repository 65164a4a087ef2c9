//go:build unix

package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinksResolve: every relative link of README.md and docs/ names a
// file that exists and, when it has one, an anchor that a heading of that
// file makes; and no document has two headings with the same anchor (a link
// to it would land on the first).
func TestDocsLinksResolve(t *testing.T) {
	repo := repoRoot(t)
	anchors := map[string]map[string]bool{} // document path → its anchors
	texts := map[string]string{}
	for _, path := range docs(t, repo) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts[path] = string(b)
		rel, _ := filepath.Rel(repo, path)
		anchors[path] = map[string]bool{}
		for _, h := range headings(string(b)) {
			a := slug(h)
			if anchors[path][a] {
				t.Errorf("%s: two headings make the anchor #%s (%q): links to it reach the first", rel, a, h)
			}
			anchors[path][a] = true
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for path, text := range texts {
		rel, _ := filepath.Rel(repo, path)
		for _, m := range link.FindAllStringSubmatch(outsideFences(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: no file %s", rel, target, file)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			as, ok := anchors[dest]
			if !ok {
				b, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				as = map[string]bool{}
				for _, h := range headings(string(b)) {
					as[slug(h)] = true
				}
				anchors[dest] = as
			}
			if !as[anchor] {
				t.Errorf("%s: link %s: no heading makes #%s in %s", rel, target, anchor, filepath.Base(dest))
			}
		}
	}
}

// outsideFences is text without its fenced code blocks.
func outsideFences(text string) string {
	var b strings.Builder
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// headings are the texts of text's ATX headings outside code fences.
func headings(text string) []string {
	var hs []string
	for line := range strings.SplitSeq(outsideFences(text), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimLeft(h, "#")
			if strings.HasPrefix(h, " ") {
				hs = append(hs, strings.TrimSpace(h))
			}
		}
	}
	return hs
}

// slug is the anchor GitHub makes of a heading: lower case, letters,
// digits, hyphens and underscores kept, spaces made hyphens, the rest
// dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
