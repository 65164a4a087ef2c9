package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A thread is titled with its first question whatever API started it:
// Chat Completions, AG-UI, a native run on a thread created without a
// title. A title the client gave (at creation, by renaming) is kept, and a
// later question does not replace the first.
func TestThreadTitleFromFirstQuestion(t *testing.T) {
	env := newWebEnv(t)
	titles := func() map[string]string {
		t.Helper()
		resp, body := env.do(t, "GET", "/api/threads", keyAlice, nil)
		var list struct {
			Threads []apiThread `json:"threads"`
		}
		if err := json.Unmarshal(body, &list); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%d %v %s", resp.StatusCode, err, body)
		}
		out := map[string]string{}
		for _, th := range list.Threads {
			out[th.ID] = th.Metadata[metaTitle]
		}
		return out
	}
	// Chat Completions: a new conversation, then a follow-up in it.
	_, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current?")))
	first := chatContent(t, body)
	env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user("What is the beam current?"), assistant(first), user("and the lifetime over the last hour?")))
	// AG-UI, with a long question on several lines.
	long := "Show me the RF cavity voltage\nover the last 2 hours, " + strings.Repeat("and the same for every other cavity of the ring ", 3)
	env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": "agui-1", "runId": "r1", "state": map[string]any{}, "tools": []any{}, "context": []any{},
		"messages": []map[string]any{{"id": "u1", "role": "user", "content": long}}})
	// Native: created without a title, then with one.
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "native-1"})
	env.do(t, "POST", "/api/threads/native-1/runs", keyAlice, map[string]any{"input": "What is the beam current?"})
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "named", "metadata": map[string]string{"title": "Morning check"}})
	env.do(t, "POST", "/api/threads/named/runs", keyAlice, map[string]any{"input": "What is the beam current?"})
	waitIdle(t, env.testEnv, "native-1", "named")

	got := titles()
	chats := 0
	for id, title := range got {
		switch {
		case id == "agui-1":
			if !strings.HasPrefix(title, "Show me the RF cavity voltage over the last 2 hours, and the same") || !strings.HasSuffix(title, "…") || len([]rune(title)) > titleRunes+1 {
				t.Errorf("AG-UI title %q", title)
			}
		case id == "native-1":
			if title != "What is the beam current?" {
				t.Errorf("native title %q", title)
			}
		case id == "named":
			if title != "Morning check" {
				t.Errorf("named thread retitled %q", title)
			}
		default:
			chats++
			if title != "What is the beam current?" {
				t.Errorf("chat thread %s titled %q, want its first question", id, title)
			}
		}
	}
	if chats != 1 || len(got) != 4 {
		t.Fatalf("threads %v: want one chat thread (the follow-up continues it), agui-1, native-1, named", got)
	}
	// Renamed, it keeps the new title after another question.
	// (A run that has ended may still be handing over: the rename waits.)
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, body := env.do(t, "PATCH", "/api/threads/native-1", keyAlice, map[string]any{"metadata": map[string]string{"title": "Beam"}})
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("rename: %d %s", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	env.do(t, "POST", "/api/threads/native-1/runs", keyAlice, map[string]any{"input": "and the lifetime?"})
	waitIdle(t, env.testEnv, "native-1")
	if got := titles()["native-1"]; got != "Beam" {
		t.Fatalf("renamed thread %q", got)
	}
}

// waitIdle waits until the threads' runs have ended.
func waitIdle(t *testing.T, env *testEnv, threads ...string) {
	t.Helper()
	for _, id := range threads {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, body := env.do(t, "GET", "/api/threads/"+id+"/state", keyAlice, nil)
			var st struct {
				Status string `json:"status"`
			}
			_ = json.Unmarshal(body, &st)
			if st.Status != "running" && st.Status != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still running: %s", id, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
