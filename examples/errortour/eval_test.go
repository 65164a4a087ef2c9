package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
)

// The tour's eval set passes through the command line every application
// built with package cli has: each severity the tour's capabilities fail
// with takes its documented route.
func TestErrorTourEvalSet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	no := false
	code := App().Run(ctx, cli.Env{Args: []string{"eval", "testdata/eval.yaml"}, Stdout: &out, Stderr: &errb, Terminal: &no,
		Getenv: func(string) string { return "" }})
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "PASS: 9 cases, 9 runs, 0 infrastructure errors") {
		t.Fatalf("output:\n%s", out.String())
	}
}
