package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

func ask(m llm.Models, role llm.Role, prompt string) (llm.Response, error) {
	model, ok := m.For(role)
	if !ok {
		return llm.Response{}, fmt.Errorf("no model for %s", role)
	}
	return model.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: prompt}}})
}

func TestScriptsPerRoleInOrder(t *testing.T) {
	m := llmtest.New().
		Script(llm.RoleClassifier, llmtest.Text("c1"), llmtest.Text("c2")).
		Script(llm.RoleOrchestrator, llmtest.Text("o1")).
		ScriptAny(llmtest.Text("any"))
	for _, tt := range []struct {
		role llm.Role
		want string
	}{{llm.RoleClassifier, "c1"}, {llm.RoleOrchestrator, "o1"}, {llm.RoleClassifier, "c2"}, {llm.RoleClassifier, "any"}} {
		r, err := ask(m, tt.role, "q")
		if err != nil || r.Text != tt.want {
			t.Fatalf("%s: got %q, %v; want %q", tt.role, r.Text, err, tt.want)
		}
	}
	if m.Remaining() != 0 || m.Count() != 4 || len(m.CallsFor(llm.RoleClassifier)) != 3 {
		t.Errorf("remaining %d, count %d, classifier calls %d", m.Remaining(), m.Count(), len(m.CallsFor(llm.RoleClassifier)))
	}
}

func TestExhaustedScriptIsAClearError(t *testing.T) {
	m := llmtest.New()
	_, err := ask(m, llm.RoleResponse, "what now?")
	var ee *llmtest.ExhaustedError
	if !errors.As(err, &ee) || !errors.Is(err, llmtest.ErrExhausted) || ee.Role != llm.RoleResponse {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), `"response"`) || !strings.Contains(err.Error(), "what now?") {
		t.Errorf("message %q should name the role and the prompt", err)
	}
}

func TestErrorsStreamsAndUsage(t *testing.T) {
	boom := errors.New("boom")
	m := llmtest.New().Script(llm.RoleResponse, llmtest.Fail(boom), llmtest.Stream("a", "b", "c"),
		llmtest.Reply{Text: "x", Usage: llm.Usage{PromptTokens: 5, CompletionTokens: 1}})
	if _, err := ask(m, llm.RoleResponse, "q"); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	model, _ := m.For(llm.RoleResponse)
	var chunks []string
	r, err := model.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "q"}},
		OnChunk: func(_ context.Context, c string) error { chunks = append(chunks, c); return nil }})
	if err != nil || r.Text != "abc" || strings.Join(chunks, "|") != "a|b|c" {
		t.Fatalf("stream: %q %q %v", r.Text, chunks, err)
	}
	if r.Usage.Total() == 0 {
		t.Error("a reply without usage must report an estimate")
	}
	r, _ = ask(m, llm.RoleResponse, "q")
	if r.Usage != (llm.Usage{PromptTokens: 5, CompletionTokens: 1}) {
		t.Errorf("usage = %+v", r.Usage)
	}
}

func TestRulesAnswerConcurrentCallsByContent(t *testing.T) {
	m := llmtest.New().On(llmtest.PromptContains("weather"), func(llm.Request) llmtest.Reply { return llmtest.Text("yes") }).
		On(llmtest.All(llmtest.RoleIs(llm.RoleClassifier)), func(llm.Request) llmtest.Reply { return llmtest.Text("no") })
	var wg sync.WaitGroup
	got := make([]string, 50)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := "about trains"
			if i%2 == 0 {
				p = "about weather"
			}
			r, err := ask(m, llm.RoleClassifier, p)
			if err != nil {
				t.Error(err)
			}
			got[i] = r.Text
		}()
	}
	wg.Wait()
	for i, g := range got {
		want := map[bool]string{true: "yes", false: "no"}[i%2 == 0]
		if g != want {
			t.Fatalf("call %d = %q, want %q", i, g, want)
		}
	}
	if m.Count() != 50 {
		t.Errorf("count = %d", m.Count())
	}
}

func TestOnlyLimitsRoles(t *testing.T) {
	m := llmtest.New().Only(llm.RoleResponse)
	if _, ok := m.For(llm.RoleClassifier); ok {
		t.Error("classifier should be offline")
	}
	if _, ok := m.For(llm.RoleResponse); !ok {
		t.Error("response should have a model")
	}
}

func TestCanceledContext(t *testing.T) {
	m := llmtest.New().ScriptAny(llmtest.Text("x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	model, _ := m.For(llm.RoleResponse)
	if _, err := model.Generate(ctx, llm.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestFailAfterStreamsThenFails(t *testing.T) {
	boom := errors.New("connection reset")
	m := llmtest.New().Script(llm.RoleResponse, llmtest.FailAfter(boom, "The beam ", "current"))
	model, _ := m.For(llm.RoleResponse)
	var got []string
	_, err := model.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "q"}},
		OnChunk: func(_ context.Context, c string) error { got = append(got, c); return nil }})
	if !errors.Is(err, boom) || strings.Join(got, "|") != "The beam |current" {
		t.Fatalf("chunks %q, err %v; want both chunks then the error", got, err)
	}
	// Without a streaming func the call simply fails.
	m.Script(llm.RoleResponse, llmtest.FailAfter(boom, "x"))
	if _, err := model.Generate(context.Background(), llm.Request{}); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}

// A hanging call returns only when its context is done, and the call log
// says how long the context had and how it ended.
func TestHangUntilTheContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleError, llmtest.Hang(), llmtest.Hang())
		model, _ := m.For(llm.RoleError)
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := model.Generate(ctx, llm.Request{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		if el := time.Since(start); el != 700*time.Millisecond {
			t.Errorf("the call returned after %v, want at its deadline", el)
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Second); cancel2() }()
		if _, err := model.Generate(ctx2, llm.Request{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		calls := m.Calls()
		if calls[0].TimeLeft != 700*time.Millisecond || !errors.Is(calls[0].CtxErr, context.DeadlineExceeded) ||
			calls[1].TimeLeft != 0 || !errors.Is(calls[1].CtxErr, context.Canceled) {
			t.Errorf("calls %+v", calls)
		}
	})
}

func TestDelayIsTheModelsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().On(llmtest.RoleIs(llm.RoleResponse), func(llm.Request) llmtest.Reply {
			return llmtest.Reply{Chunks: []string{"a", "b"}, Delay: 200 * time.Millisecond}
		})
		model, _ := m.For(llm.RoleResponse)
		start := time.Now()
		var got []string
		resp, err := model.Generate(context.Background(), llm.Request{OnChunk: func(_ context.Context, c string) error {
			if el := time.Since(start); el != 200*time.Millisecond {
				t.Errorf("chunk %q after %v, want after the delay", c, el)
			}
			got = append(got, c)
			return nil
		}})
		if err != nil || resp.Text != "ab" || strings.Join(got, "|") != "a|b" {
			t.Fatalf("reply %q, chunks %v, err %v", resp.Text, got, err)
		}
		// A context that ends during the delay ends the call with its error.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start = time.Now()
		if _, err := model.Generate(ctx, llm.Request{}); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("err %v after %v, want the deadline's error at 50ms", err, time.Since(start))
		}
	})
}

func TestNoLogCountsWithoutKeeping(t *testing.T) {
	m := llmtest.New().ScriptAny(llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"))
	if _, err := ask(m, llm.RoleResponse, "first"); err != nil {
		t.Fatal(err)
	}
	m.NoLog()
	for range 2 {
		if _, err := ask(m, llm.RoleResponse, "more"); err != nil {
			t.Fatal(err)
		}
	}
	if calls := m.Calls(); m.Count() != 3 || len(calls) != 1 || calls[0].Prompt() != "first" {
		t.Fatalf("Count %d, calls %+v: want 3 counted and only the one made before NoLog kept", m.Count(), calls)
	}
	if _, err := ask(m, llm.RoleResponse, "exhausted"); err == nil || !strings.Contains(err.Error(), "call 4") {
		t.Fatalf("the fourth call: %v, want the exhausted-script error numbering it 4", err)
	}
}

// With CachePrompts a prompt sharing a long prefix with an earlier one
// reports that prefix as cached, in OpenAI's steps: nothing under 1024
// tokens, then multiples of 128.
func TestCachePromptsReportsTheSharedPrefix(t *testing.T) {
	m := llmtest.New().CachePrompts().On(func(llm.Request) bool { return true }, func(llm.Request) llmtest.Reply { return llmtest.Text("ok") })
	stable := strings.Repeat("guide ", 1000) // 6000 characters: 1500 tokens
	for _, tt := range []struct {
		prompt string
		cached int
	}{
		{stable + "first question", 0},                                  // nothing seen before
		{stable + "second question", 1408},                              // 6000 characters shared: 1500 tokens → 1408
		{"another system prompt " + stable, 0},                          // no common start
		{strings.Repeat("guide ", 100) + "short", 0},                    // 600 shared characters: under 1024 tokens
		{stable + "first question", (len(stable) + 14) / 4 / 128 * 128}, // the whole prompt again
	} {
		r, err := ask(m, llm.RoleOrchestrator, tt.prompt)
		if err != nil {
			t.Fatal(err)
		}
		if r.Usage.CachedPromptTokens != tt.cached || r.Usage.PromptTokens != (len(tt.prompt)+3)/4 {
			t.Errorf("%.30q…: usage %+v, want %d cached", tt.prompt, r.Usage, tt.cached)
		}
	}
}

// A streamed reply with ChunkDelay sends its first chunk after Delay and
// each next one ChunkDelay later, as a model producing tokens does.
func TestChunkDelayPacesTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleResponse, llmtest.Reply{Chunks: []string{"a", "b", "c"}, Delay: 300 * time.Millisecond, ChunkDelay: 50 * time.Millisecond})
		model, _ := m.For(llm.RoleResponse)
		start := time.Now()
		var at []time.Duration
		resp, err := model.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "q"}},
			OnChunk: func(context.Context, string) error { at = append(at, time.Since(start)); return nil }})
		if err != nil || resp.Text != "abc" {
			t.Fatalf("%q, %v", resp.Text, err)
		}
		if want := []time.Duration{300 * time.Millisecond, 350 * time.Millisecond, 400 * time.Millisecond}; !slices.Equal(at, want) {
			t.Errorf("chunks at %v, want %v", at, want)
		}
	})
}
