package wiring

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

func TestParseStore(t *testing.T) {
	env := map[string]string{"HOME": "/home/ada"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		in   string
		want StoreSpec
		err  bool
	}{
		{"memory", StoreSpec{Kind: StoreMemory}, false},
		{"sqlite:/tmp/x.db", StoreSpec{Kind: StoreSQLite, Path: "/tmp/x.db"}, false},
		{"postgres://u:p@h/db", StoreSpec{Kind: StorePostgres, DSN: "postgres://u:p@h/db"}, false},
		{"postgresql://h/db", StoreSpec{Kind: StorePostgres, DSN: "postgresql://h/db"}, false},
		{"sqlite:", StoreSpec{}, true},
		{"redis://x", StoreSpec{}, true},
		{"Memory", StoreSpec{}, true},
	}
	for _, tt := range tests {
		got, err := ParseStore(tt.in, "capgraph", getenv)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseStore(%q) = %+v, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrStore) {
			t.Errorf("ParseStore(%q): %v is not ErrStore", tt.in, err)
		}
	}
	if got := (StoreSpec{Kind: StorePostgres, DSN: "postgres://u:secret@h/db"}).String(); got != "postgres (postgres://u:***@h/db)" {
		t.Errorf("String hides no password: %q", got)
	}
}

func TestDefaultStorePath(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
		err  bool
	}{
		{map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/ada"}, "/xdg/capgraph/capgraph.db", false},
		{map[string]string{"HOME": "/home/ada"}, "/home/ada/.local/share/capgraph/capgraph.db", false},
		{map[string]string{}, "", true},
	}
	for _, tt := range tests {
		got, err := DefaultStorePath("capgraph", func(k string) string { return tt.env[k] })
		if (err != nil) != tt.err || got != filepath.FromSlash(tt.want) {
			t.Errorf("%v: %q, %v", tt.env, got, err)
		}
	}
	// Empty --store is the default path.
	s, err := ParseStore("", "capgraph", func(k string) string { return map[string]string{"XDG_DATA_HOME": "/d"}[k] })
	if err != nil || s != (StoreSpec{Kind: StoreSQLite, Path: "/d/capgraph/capgraph.db"}) {
		t.Errorf("default: %+v %v", s, err)
	}
}

func TestOpenStoreCreatesSQLiteDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "c.db")
	st, closeFn, err := OpenStore(context.Background(), StoreSpec{Kind: StoreSQLite, Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, err := st.Threads(context.Background(), checkpoint.ThreadFilter{}); err != nil {
		t.Fatal(err)
	}
}

// Each application keeps its default store in a directory of its own; its
// name must be a plain file name.
func TestDefaultStorePathPerApplication(t *testing.T) {
	env := func(k string) string { return map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/ada"}[k] }
	for app, want := range map[string]string{"capgraph": "/xdg/capgraph/capgraph.db", "myagent": "/xdg/myagent/myagent.db", "beam-line_2.0": "/xdg/beam-line_2.0/beam-line_2.0.db"} {
		if got, err := DefaultStorePath(app, env); err != nil || got != filepath.FromSlash(want) {
			t.Errorf("%s: %q, %v; want %s", app, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", `a\b`, ".hidden", "-flag", "my agent"} {
		if _, err := DefaultStorePath(bad, env); !errors.Is(err, ErrAppName) {
			t.Errorf("%q: err = %v, want ErrAppName", bad, err)
		}
	}
}
