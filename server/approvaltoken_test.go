package server

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/state"
)

// snapshotWrites counts archive_snapshot's attempts and its saved
// snapshots across server instances (restarts) sharing one store.
type snapshotWrites struct {
	mu             sync.Mutex
	attempts, done int
}

func (w *snapshotWrites) saved() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// sqliteApprovalEnv is one server process over the SQLite file at path: a
// real agent whose archive_snapshot fails once with resource exhaustion
// (which asks a human whether to retry) and then saves snapshot snap-7.
func sqliteApprovalEnv(t *testing.T, path string, w *snapshotWrites) *testEnv {
	t.Helper()
	store, err := sqlite.New(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return approvalEnv(t, store, w)
}

// approvalEnv is sqliteApprovalEnv's server on any store.
func approvalEnv(t *testing.T, store checkpoint.Store, w *snapshotWrites) *testEnv {
	t.Helper()
	snap := capabilities.Define(capabilities.Definition{
		Name: "archive_snapshot", Description: "Save a snapshot of the machine settings to the archive",
		Provides: []string{"SNAPSHOT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to save or archive a snapshot of the settings.",
			Examples: []capabilities.ClassifierExample{{Query: "save a snapshot of the settings", Result: true, Reason: "asks for a snapshot"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.attempts++
			if w.attempts == 1 {
				return capabilities.Output{}, capabilities.ErrResourceExhausted
			}
			w.done++
			return capabilities.Result("SNAPSHOT", "snap-7", "snapshot snap-7 saved"), nil
		},
	})
	a, err := agent.New(agent.Config{Registry: newRegistry(t, readBeamCurrent(t), snap), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) { c.Runner = a })
}

// sendLibreChat posts a LibreChat-shaped (streaming, no chat id) request
// and returns the answer's text.
func sendLibreChat(t *testing.T, env *testEnv, key string, msgs ...map[string]any) string {
	t.Helper()
	resp, b := env.do(t, "POST", "/v1/chat/completions", key, libreChat(msgs...))
	v := parseLikeOpenWebUI(t, string(b))
	if resp.StatusCode != http.StatusOK || !v.Done {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	return v.Content
}

const snapshotQ = "Save a snapshot of the settings"

// askSnapshot runs the first turn on a fresh store and returns the
// approval request and its token.
func askSnapshot(t *testing.T, env *testEnv) (ask, tok string) {
	t.Helper()
	ask = sendLibreChat(t, env, keyAlice, user(snapshotQ))
	tok, ok := approvaltoken.Find(ask)
	if !ok {
		t.Fatalf("no approval request: %q", ask)
	}
	return ask, tok
}

// An approval asked by one server process is answered through another on
// the same store (a restart, or another replica): with the token repeated
// or with a plain "yes" under the resent history; another principal's
// token is refused; repeated answers carry the write out once.
func TestApprovalTokenAcrossRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(tok string) string
	}{
		{"token repeated", func(tok string) string { return "yes " + tok }},
		{"transcript only", func(string) string { return "yes" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat.db")
			w := &snapshotWrites{}
			a := sqliteApprovalEnv(t, path, w)
			ask, tok := askSnapshot(t, a)
			a.http.Close()

			b := sqliteApprovalEnv(t, path, w)
			answer := []map[string]any{user(snapshotQ), assistant(ask), user(tc.answer(tok))}
			// Bob resends alice's conversation: not his approval.
			if got := sendLibreChat(t, b, keyBob, answer...); strings.Contains(got, "snap-7") || w.saved() != 0 {
				t.Fatalf("bob's answer carried out alice's approval: %q, %d saved", got, w.saved())
			}
			done := sendLibreChat(t, b, keyAlice, answer...)
			if !strings.Contains(done, "snap-7") || w.saved() != 1 {
				t.Fatalf("answer on the new instance: %q, %d saved", done, w.saved())
			}
			// A repeated request on the same instance replays the reply.
			if again := sendLibreChat(t, b, keyAlice, answer...); again != done || w.saved() != 1 {
				t.Fatalf("replay on the same instance: %q, %d saved", again, w.saved())
			}
			b.http.Close()

			// And on a third instance, which knows the token only from the store.
			c := sqliteApprovalEnv(t, path, w)
			again := sendLibreChat(t, c, keyAlice, answer...)
			if !strings.Contains(again, "already answered (approved)") || !strings.Contains(again, "snap-7") || w.saved() != 1 {
				t.Fatalf("replay on another instance: %q, %d saved", again, w.saved())
			}
			// The conversation goes on in the same thread.
			next := sendLibreChat(t, c, keyAlice, append(answer, assistant(done), user("What is the beam current of the storage ring?"))...)
			if !strings.Contains(next, "401.5") {
				t.Fatalf("follow-up: %q", next)
			}
			if _, turn, _ := onlyThreadTurn(t, c, keyAlice); turn != 2 {
				t.Fatalf("the follow-up ran turn %d of alice's thread, want 2", turn)
			}
		})
	}
}

// Tokens are derived, not random: the same for every process, distinct
// per approval, thread and principal, and in the format clients see.
func TestApprovalTokenDerivation(t *testing.T) {
	at := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	ap := state.Approval{ID: "t1-p1-s0-write", Created: at}
	base := approvalToken("alice", "th1", ap)
	if !approvaltoken.Contains(base) || len(base) != len("AP-")+8 {
		t.Fatalf("token %q does not look like AP-XXXXXXXX", base)
	}
	if got := approvalToken("alice", "th1", state.Approval{ID: ap.ID, Created: at.In(time.FixedZone("x", 3600))}); got != base {
		t.Fatalf("same approval, other zone: %q != %q", got, base)
	}
	for name, tok := range map[string]string{
		"other approval":    approvalToken("alice", "th1", state.Approval{ID: "t1-p1-s1-write", Created: at}),
		"asked again later": approvalToken("alice", "th1", state.Approval{ID: ap.ID, Created: at.Add(time.Hour)}),
		"other thread":      approvalToken("alice", "th2", ap),
		"other principal":   approvalToken("bob", "th1", ap),
	} {
		if tok == base {
			t.Errorf("%s: same token %q", name, tok)
		}
	}
	if base[3:7] != approvalTokenKey("alice", "th1") {
		t.Fatalf("token %q does not start with its thread key %q", base, approvalTokenKey("alice", "th1"))
	}
}

// Two replicas on one shared store (with thread leases, as replicas need:
// docs/persistence.md) get the same "yes AP-…" at once, one of them
// twice: the write is carried out once; each request answers with what
// became of it or, while the other replica holds the thread, a conflict to
// retry; after the run every replica replays the outcome.
func TestApprovalTokenTwoReplicas(t *testing.T) {
	for _, be := range replicaBackends {
		t.Run(be.Name, func(t *testing.T) {
			s1, s2 := be.Open(t)
			w := &snapshotWrites{}
			a, b := approvalEnv(t, s1, w), approvalEnv(t, s2, w)
			ask, tok := askSnapshot(t, a)
			answer := libreChat(user(snapshotQ), assistant(ask), user("yes "+tok))
			envs := []*testEnv{a, b, b}
			var wg sync.WaitGroup
			replies := make([]string, len(envs))
			codes := make([]int, len(envs))
			for i, env := range envs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, answer)
					codes[i], replies[i] = resp.StatusCode, string(body)
				}()
			}
			wg.Wait()
			if w.saved() != 1 {
				t.Fatalf("%d snapshots saved, want 1; replies %q", w.saved(), replies)
			}
			for i, body := range replies {
				switch codes[i] {
				case http.StatusOK:
					// A stream ends with the answer, with the note that
					// the other request carries it out, or with an error
					// frame when the other replica held the thread.
					v := parseLikeOpenWebUI(t, body)
					if !strings.Contains(v.Content, "snap-7") && !strings.Contains(v.Content, "already answered (approved)") && !strings.Contains(body, "already in progress") {
						t.Errorf("request %d: %s", i, body)
					}
				case http.StatusConflict:
				default:
					t.Errorf("request %d: %d %s", i, codes[i], body)
				}
			}
			for i, env := range []*testEnv{a, b} {
				if got := sendLibreChat(t, env, keyAlice, user(snapshotQ), assistant(ask), user("yes "+tok)); !strings.Contains(got, "snap-7") {
					t.Errorf("replica %d after the run: %q", i, got)
				}
			}
			if w.saved() != 1 {
				t.Fatalf("%d snapshots saved after the replays, want 1", w.saved())
			}
		})
	}
}

// A token must not outlive the agent's own approval expiry, nor expire
// before it: the agent decides whether a late answer counts.
func TestTokenExpiryFollowsTheApproval(t *testing.T) {
	s := &Server{cfg: Config{ApprovalTTL: 30 * time.Minute}}
	asked := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	own := state.Approval{ID: "step:1:1:0:channel_write", Created: asked, Expires: asked.Add(time.Hour)}
	if got := s.tokenExpiry(own, asked); !got.Equal(asked.Add(time.Hour)) {
		t.Errorf("approval with its own expiry: token expires %v, want %v", got, asked.Add(time.Hour))
	}
	never := state.Approval{ID: "step:1:1:0:channel_write", Created: asked}
	if got := s.tokenExpiry(never, asked); !got.Equal(asked.Add(30 * time.Minute)) {
		t.Errorf("approval without expiry: token expires %v, want ApprovalTTL after asking", got)
	}
}
