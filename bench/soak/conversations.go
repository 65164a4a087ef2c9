// Conversations drives a capgraph server from the client side, as chat
// frontends do: many concurrent conversations over the OpenAI Chat
// Completions API, each sending its whole history every turn (unlike
// bench/loadgen, whose every question is a new conversation) and reading
// the streamed answer to its end, counting what went wrong and how long
// answers took.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config says what to drive.
type Config struct {
	// BaseURL is the server's OpenAI base URL ("http://127.0.0.1:8080/v1").
	BaseURL string
	// Key is the bearer key; empty sends none.
	Key string
	// Model is the model id; default "capgraph".
	Model string
	// Conversations run at once, each one client in a loop.
	Conversations int
	// Duration of the run; every conversation stops starting turns then
	// and finishes the one in progress.
	Duration time.Duration
	// Turns per conversation before it starts a new one (its history grows
	// until then); default 5.
	Turns int
	// Questions the conversations ask, in turn; required.
	Questions []string
	// Stream asks for streamed answers (the default for frontends).
	Stream bool
	// Client sends the requests; default one with a keep-alive pool sized
	// for Conversations and a 5 min timeout.
	Client *http.Client
}

// Result is what a run measured.
type Result struct {
	// Turns answered, and turns that failed, by what went wrong.
	Answered int
	Failed   map[string]int
	// Latencies of the answered turns (request sent → answer complete).
	Latencies []time.Duration
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// Errors counts the failed turns.
func (r Result) Errors() int {
	n := 0
	for _, c := range r.Failed {
		n += c
	}
	return n
}

// Percentile returns the p-th percentile (0–100) of the latencies.
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	s := slices.Clone(r.Latencies)
	slices.Sort(s)
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Run drives the server until cfg.Duration has passed (or ctx ends) and
// every conversation's last turn has ended.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.BaseURL == "" || cfg.Conversations < 1 || len(cfg.Questions) == 0 || cfg.Duration <= 0 {
		return Result{}, errors.New("load: BaseURL, Conversations ≥ 1, Questions and a positive Duration are required")
	}
	if cfg.Model == "" {
		cfg.Model = "capgraph"
	}
	if cfg.Turns <= 0 {
		cfg.Turns = 5
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 5 * time.Minute,
			Transport: &http.Transport{MaxIdleConns: cfg.Conversations, MaxIdleConnsPerHost: cfg.Conversations}}
	}
	res := Result{Failed: map[string]int{}}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	start := time.Now()
	stop := start.Add(cfg.Duration)
	for c := range cfg.Conversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var history []message
			for turn := 0; time.Now().Before(stop) && ctx.Err() == nil; turn++ {
				if turn%cfg.Turns == 0 {
					history = nil
				}
				// Each conversation asks its own words (a frontend's user), so
				// no two conversations send the same transcript.
				q := fmt.Sprintf("%s (conversation %d, turn %d)", cfg.Questions[(c+turn)%len(cfg.Questions)], c, turn%cfg.Turns+1)
				history = append(history, message{Role: "user", Content: q})
				t0 := time.Now()
				answer, kind := ask(ctx, cfg, history)
				took := time.Since(t0)
				mu.Lock()
				if kind != "" {
					res.Failed[kind]++
				} else {
					res.Answered++
					res.Latencies = append(res.Latencies, took)
				}
				mu.Unlock()
				if kind != "" {
					history = nil // start over, as a user would after an error
					continue
				}
				history = append(history, message{Role: "assistant", Content: answer})
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, nil
}

// ask sends one turn and returns the answer, or what went wrong ("" when
// nothing did).
func ask(ctx context.Context, cfg Config, history []message) (string, string) {
	body, _ := json.Marshal(map[string]any{"model": cfg.Model, "stream": cfg.Stream, "messages": history})
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimSuffix(cfg.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", "request"
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Key)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return "", "connection"
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return "", fmt.Sprintf("status %d", resp.StatusCode)
	}
	if !cfg.Stream {
		var out struct {
			Choices []struct {
				Message message `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 || out.Choices[0].Message.Content == "" {
			return "", "bad answer"
		}
		return out.Choices[0].Message.Content, ""
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	done := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil {
			return "", "bad frame"
		}
		if chunk.Error != nil {
			return "", "error frame"
		}
		for _, c := range chunk.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	if !done || b.Len() == 0 {
		return "", "stream cut"
	}
	return b.String(), ""
}
