package cli

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"runtime/debug"
	"strings"
)

// goRunExe matches where `go run` puts the program it builds: a temporary
// work directory (".../go-build123/b001/exe/NAME") or, since Go 1.24, an
// executable cached in the build cache ("<GOCACHE>/ab/<64 hex>-d/NAME"),
// wherever GOCACHE is (~/.cache/go-build by default, but any directory a
// user or CI sets).
var goRunExe = regexp.MustCompile(`((^|/)go-build\d*/b\d+/exe|(^|/)[0-9a-f]{2}/[0-9a-f]{64}-d)/[^/]+$`)

// Invocation returns how the user ran this program, for the hints the
// commands print ("continue with: capgraph chat --thread …"), so that a
// hint pasted into the same shell runs the same program: the go run form
// when arg0 is a binary `go run` built ("go run ./cmd/capgraph", "go run
// ." for a program at its module's root, "go run
// github.com/…/cmd/capgraph@v1.2.0" for one run by module version); the
// name alone for a program found on the PATH (go install's, or any
// installed binary); else the path as typed ("./myagent" for one just
// built by go build). bi is the program's build information (nil: none).
func Invocation(arg0 string, bi *debug.BuildInfo) string {
	typed := arg0
	arg0 = strings.ReplaceAll(arg0, `\`, "/") // Windows paths, read anywhere
	name := strings.TrimSuffix(path.Base(arg0), ".exe")
	if !goRunExe.MatchString(arg0) || bi == nil || bi.Path == "" {
		if !strings.Contains(arg0, "/") || onPath(name, typed) {
			return name
		}
		return typed
	}
	mod, v := bi.Main.Path, bi.Main.Version
	if v != "" && v != "(devel)" {
		// go run module/pkg@version: the module came from the module cache.
		return "go run " + bi.Path + "@" + v
	}
	switch {
	case bi.Path == mod:
		return "go run ."
	case mod != "" && strings.HasPrefix(bi.Path, mod+"/"):
		// Relative to the module's root, where the README's commands run.
		return "go run ./" + strings.TrimPrefix(bi.Path, mod+"/")
	}
	return "go run " + bi.Path
}

// onPath reports whether name, looked up on the PATH, is the file at
// typed: then the name alone runs it.
func onPath(name, typed string) bool {
	found, err := exec.LookPath(name)
	if err != nil {
		return false
	}
	a, err1 := os.Stat(found)
	b, err2 := os.Stat(typed)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// processInvocation is Invocation for this process.
func processInvocation() string {
	bi, _ := debug.ReadBuildInfo()
	return Invocation(os.Args[0], bi)
}
