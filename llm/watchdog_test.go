package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

func streamed(ctx context.Context, m llm.Model, got *[]string) (llm.Response, error) {
	return m.Generate(ctx, llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "user", Content: "x"}},
		OnChunk: func(_ context.Context, c string) error { *got = append(*got, c); return nil }})
}

// A stream that stops mid-reply is cancelled once no token came for the
// idle timeout: a typed error, RETRIABLE, kind timeout. A slow stream
// whose tokens keep coming is not cut however long it takes, and a call
// that does not stream is not watched. Virtual time.
func TestIdleWatchdogCancelsAStalledStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := llmtest.New().Script(llm.RoleResponse,
			llmtest.Reply{Chunks: []string{"The beam ", "current is 401.5 mA."}, ChunkDelay: time.Hour}, // stalls after the first chunk
			llmtest.Reply{Chunks: []string{"a", "b", "c", "d", "e"}, ChunkDelay: 20 * time.Second},      // slow but steady: 80s in all
			llmtest.Reply{Text: "not streamed", Delay: 5 * time.Minute})
		m, _ := llm.WatchModels(script, 30*time.Second).For(llm.RoleResponse)
		var got []string
		_, err := streamed(context.Background(), m, &got)
		var le *llm.Error
		if !errors.Is(err, llm.ErrStalled) || !errors.As(err, &le) || le.Role != llm.RoleResponse {
			t.Fatalf("stalled stream: %v, want an *llm.Error of kind ErrStalled for role response", err)
		}
		if cl := capabilities.DefaultClassify(err); cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindTimeout {
			t.Fatalf("classified %+v, want retriable timeout", cl)
		}
		if strings.Join(got, "") != "The beam " || !strings.Contains(err.Error(), "no token for 30s") {
			t.Fatalf("chunks %q, error %q", got, err)
		}
		got = nil
		if resp, err := streamed(context.Background(), m, &got); err != nil || resp.Text != "abcde" {
			t.Fatalf("slow stream: %q, %v; want it whole", resp.Text, err)
		}
		if resp, err := m.Generate(context.Background(), llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "user", Content: "x"}}}); err != nil || resp.Text != "not streamed" {
			t.Fatalf("unstreamed call: %q, %v", resp.Text, err)
		}
		// The caller's own cancellation stays the caller's: not a stall.
		hang := llm.Watch(llmtest.New().ScriptAny(llmtest.Hang()), time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := streamed(ctx, hang, &got); errors.Is(err, llm.ErrStalled) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("caller's deadline: %v", err)
		}
	})
}

// Through a real provider (an OpenAI-compatible server that sends one
// chunk and then nothing): the configured idle_timeout cancels the call
// with ErrStalled, naming the role and provider.
func TestIdleTimeoutOnAProviderStream(t *testing.T) {
	srv := openAIServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", "Beam ")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // and then silence
	})
	m, _ := models(t, srv.URL+"/v1", func(rc *llm.RoleConfig) { rc.IdleTimeout = capabilities.Duration(200 * time.Millisecond) }, "").For(llm.RoleResponse)
	var got []string
	_, err := streamed(context.Background(), m, &got)
	var le *llm.Error
	if !errors.Is(err, llm.ErrStalled) || !errors.As(err, &le) || le.Provider != llm.ProviderOpenAI || le.Role != llm.RoleResponse {
		t.Fatalf("%v (%+v), want ErrStalled from the openai provider", err, le)
	}
	if strings.Join(got, "") != "Beam " {
		t.Fatalf("chunks %q", got)
	}
}

// A stall keeps the provider's Retry-After, which the retry policy
// honours over its computed delay.
func TestStalledKeepsRetryAfter(t *testing.T) {
	err := &llm.Error{Kind: llm.ErrStalled, Role: llm.RoleResponse, Delay: 7 * time.Second}
	if cl := err.Classification(); cl.Severity != capabilities.Retriable || cl.RetryAfter.D() != 7*time.Second {
		t.Fatalf("%+v, want retriable after 7s", cl)
	}
}
