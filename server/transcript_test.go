package server

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/transcripts"
)

func TestCanonicalText(t *testing.T) {
	const sent = "The beam current is 401.5 mA.\n\nIt was read from SR:DCCT."
	tests := []struct {
		name     string
		got      string
		same     bool
		sentText string
	}{
		{"identical", sent, true, sent},
		{"whitespace stripped and re-wrapped", "The beam current is 401.5 mA. It was read from\nSR:DCCT.  ", true, sent},
		{"reasoning folded by Open WebUI", "<details type=\"reasoning\" done=\"true\" duration=\"2\">\n<summary>Thought for 2 seconds</summary>\n> Plan:\n> 1. read\n</details>\n" + sent, true, sent},
		{"think block", "<think>plan…</think>" + sent, true, sent},
		{"approval token line dropped", "Set SR:HCM1 to 1.5 A.", true, "Set SR:HCM1 to 1.5 A.\n\nApproval ID: AP-ABCDEFGH — reply \"yes\" to proceed or \"no\" to cancel."},
		{"shutdown note dropped", sent, true, sent + chatanswer.ShutdownNote},
		{"different words", "The beam current is 402.5 mA. It was read from SR:DCCT.", false, sent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if eq := transcripts.Canonical(tc.got) == transcripts.Canonical(tc.sentText); eq != tc.same {
				t.Fatalf("canonical(%q)=%q vs canonical(%q)=%q: equal %v, want %v", tc.got, transcripts.Canonical(tc.got), tc.sentText, transcripts.Canonical(tc.sentText), eq, tc.same)
			}
		})
	}
	alice := caller{Principal: Principal{Name: "alice", Tenant: "lab"}}
	bob := caller{Principal: Principal{Name: "bob", Tenant: "lab"}}
	msgs := []transcripts.Msg{{Role: "system", Text: "be brief"}, {Role: "user", Text: "hi"}, {Role: "assistant", Text: "hello"}}
	if transcriptDigest(alice, msgs) == transcriptDigest(bob, msgs) {
		t.Fatal("digests are not scoped to the principal")
	}
	if transcriptDigest(alice, msgs) != transcriptDigest(alice, msgs[1:]) {
		t.Fatal("a system message changed the digest")
	}
	if transcriptDigest(alice, []transcripts.Msg{{Role: "user", Text: "ab"}, {Role: "user", Text: "c"}}) == transcriptDigest(alice, []transcripts.Msg{{Role: "user", Text: "a"}, {Role: "user", Text: "bc"}}) {
		t.Fatal("message boundaries are not part of the digest")
	}
}

// libreChat is LibreChat's request for a custom endpoint (frontends.md
// §2.2): streaming, its sampling parameters, a user id in the body, the
// whole conversation, no chat id header.
func libreChat(msgs ...map[string]any) map[string]any {
	return map[string]any{"model": "capgraph", "stream": true, "user": "6650f0c0c0ffee",
		"temperature": 1, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0, "messages": msgs}
}

// threadState reads the turn number and user inputs of alice's only
// thread (listed from the store).
func onlyThreadTurn(t *testing.T, env *testEnv, key string) (id string, turn int, inputs []string) {
	t.Helper()
	_, body := env.do(t, "GET", "/api/threads", key, nil)
	ths := threadIDs(t, body)
	if len(ths) != 1 {
		t.Fatalf("want one thread, got %s", body)
	}
	for id = range ths {
	}
	_, body = env.do(t, "GET", "/api/threads/"+id+"/state", key, nil)
	var st struct {
		State struct {
			Messages []struct{ Role, Content string }
			Turn     struct{ Number int }
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, m := range st.State.Messages {
		if m.Role == "user" {
			inputs = append(inputs, m.Content)
		}
	}
	return id, st.State.Turn.Number, inputs
}

// LibreChat sends no chat id: three turns of one conversation continue one
// agent thread, recognised by the transcript, even when the client strips
// whitespace from our answers, folds the reasoning, and the server
// restarted between turns.
func TestTranscriptContinuesLibreChatConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	first := sqliteAgentEnv(t, path)
	q1, q2, q3 := "What is the beam current?", "Is that the storage ring?", "Read it again please"
	send := func(env *testEnv, key string, body map[string]any) string {
		t.Helper()
		resp, b := env.do(t, "POST", "/v1/chat/completions", key, body)
		v := parseLikeOpenWebUI(t, string(b))
		if resp.StatusCode != http.StatusOK || !v.Done || v.Content == "" {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return v.Content
	}
	a1 := send(first, keyAlice, libreChat(user(q1)))
	a2 := send(first, keyAlice, libreChat(user(q1), assistant(strings.Join(strings.Fields(a1), " ")), user(q2)))
	if _, turn, _ := onlyThreadTurn(t, first, keyAlice); turn != 2 {
		t.Fatalf("second message ran turn %d of its thread, want 2", turn)
	}
	first.http.Close()

	// A restart: the transcript is found through the store's metadata.
	second := sqliteAgentEnv(t, path)
	folded := "<details type=\"reasoning\" done=\"true\" duration=\"1\">\n<summary>Thought for 1 seconds</summary>\n> Plan:\n</details>\n" + a2
	send(second, keyAlice, libreChat(user(q1), assistant(a1), user(q2), assistant(folded), user(q3)))
	_, turn, inputs := onlyThreadTurn(t, second, keyAlice)
	if turn != 3 || strings.Join(inputs, "|") != q1+"|"+q2+"|"+q3 {
		t.Fatalf("third message: turn %d, inputs %q", turn, inputs)
	}

	// The same transcript from another principal is not alice's thread.
	send(second, keyBob, libreChat(user(q1), assistant(a1), user(q2)))
	if _, turn, _ := onlyThreadTurn(t, second, keyBob); turn != 1 {
		t.Fatalf("bob continued a thread at turn %d", turn)
	}
	// An edited history (a changed earlier question) starts a new thread.
	send(second, keyAlice, libreChat(user("What is the vacuum?"), assistant(a1), user(q2)))
	_, body := second.do(t, "GET", "/api/threads", keyAlice, nil)
	if n := len(threadIDs(t, body)); n != 2 {
		t.Fatalf("alice has %d threads after an edited history, want 2: %s", n, body)
	}
}

// The in-memory index follows a conversation through an approval: the
// request after the approved run continues the same thread.
func TestTranscriptAfterApproval(t *testing.T) {
	env := newRealAgentEnv(t)
	q1 := "Save a snapshot of the settings"
	_, b := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(q1)))
	ask := chatContent(t, b)
	tok, ok := approvaltoken.Find(ask)
	if !ok {
		t.Fatalf("no approval: %q", ask)
	}
	_, b = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(q1), assistant(ask), user("yes "+tok)))
	done := chatContent(t, b)
	if !strings.Contains(done, "snap-7") {
		t.Fatalf("after yes: %q", done)
	}
	_, b = env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false,
		user(q1), assistant(ask), user("yes "+tok), assistant(done), user("What is the beam current of the storage ring?")))
	if c := chatContent(t, b); !strings.Contains(c, "401.5") {
		t.Fatalf("third: %q", c)
	}
	if _, turn, _ := onlyThreadTurn(t, env.testEnv, keyAlice); turn != 2 {
		t.Fatalf("the question after the approval ran turn %d, want 2", turn)
	}
}
