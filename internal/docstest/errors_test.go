package docstest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/errors.md lists every exported error type (a type named …Error)
// and sentinel (a package variable named Err…) of the library packages,
// under its package's heading, and nothing that no longer exists: the
// overview is complete, and a new error is documented when it is added.
func TestErrorsOverviewListsEveryError(t *testing.T) {
	repo := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{} // "pkg.Name"
	pkg := ""
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			pkg = strings.TrimSpace(h)
			continue
		}
		if name, ok := strings.CutPrefix(line, "| `"); ok && pkg != "" {
			name, _, _ = strings.Cut(name, "`")
			documented[pkg+"."+strings.TrimPrefix(name, "*")] = true
		}
	}
	exported := map[string]bool{}
	skip := []string{"cmd", "examples", "bench", "demo", "internal", "testdata", "node_modules"}
	err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, p)
		if d.IsDir() {
			for _, part := range strings.Split(rel, string(filepath.Separator)) {
				for _, s := range skip {
					if part == s || strings.HasPrefix(part, ".") && part != "." {
						return filepath.SkipDir
					}
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && strings.HasSuffix(s.Name.Name, "Error") {
						exported[dir+"."+s.Name.Name] = true
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if g.Tok == token.VAR && id.IsExported() && strings.HasPrefix(id.Name, "Err") {
							exported[dir+"."+id.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(exported) < 100 {
		t.Fatalf("found only %d exported errors: the walk is broken", len(exported))
	}
	for e := range exported {
		if !documented[e] {
			t.Errorf("docs/errors.md does not list %s (under \"## %s\")", e, e[:strings.LastIndex(e, ".")])
		}
	}
	for e := range documented {
		if !exported[e] {
			t.Errorf("docs/errors.md lists %s, which is not an exported error of a library package", e)
		}
	}
}
