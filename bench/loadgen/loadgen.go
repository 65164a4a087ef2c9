// Package loadgen drives a capgraph server as chat frontends do: concurrent
// clients, each asking one question after another over streamed Chat
// Completions (POST /v1/chat/completions, "stream": true), reading every
// server-sent event to the final [DONE], and recording each turn's latency
// and outcome. A new conversation per question is a new thread on the
// server. It is the client side of the load and soak commands of bench/
// (see docs/performance.md), and it uses only the standard library, so
// another command can share it.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config describes a load.
type Config struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:8080.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	// Model is the Chat Completions model; default "capgraph".
	Model string
	// Clients is the number of concurrent clients; default 1.
	Clients int
	// Duration is how long clients start new turns; a turn in progress at
	// the end is finished and counted. Turns, when positive, instead stops
	// each client after that many turns.
	Duration time.Duration
	Turns    int
	// Question returns the question a client asks in its n-th turn (from
	// 0); default a fixed question.
	Question func(client, n int) string
	// Check, when set, judges each answer; an error counts the turn as
	// failed.
	Check func(answer string) error
	// Ramp spreads the clients' starts: client c starts c×Ramp/Clients
	// after the first. Clients started together stay in step when every
	// turn takes as long, and their requests then arrive in bursts; a Ramp
	// of one turn's duration makes them arrive evenly. Default 0.
	Ramp time.Duration
	// Timeout bounds one turn; default 2 minutes.
	Timeout time.Duration
	// Headers, when set, returns the headers a client adds to its n-th
	// request: a trusted frontend's forwarded user and chat, say.
	Headers func(client, n int) http.Header
}

// Turn is one question and its answer.
type Turn struct {
	// Client and N say whose n-th question (from 0) it was.
	Client, N int
	Start     time.Time
	// Latency runs from sending the request to the [DONE] event.
	Latency time.Duration
	// Answer is the streamed content, joined.
	Answer string
	Err    error
}

// Result is a load's turns, in the order they ended.
type Result struct {
	Turns []Turn
	// Elapsed runs from the first request to the last [DONE].
	Elapsed time.Duration
}

// Run runs the load and returns its turns. It fails only when the load
// cannot start; failed turns are in the result.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.BaseURL == "" {
		return Result{}, errors.New("loadgen: BaseURL is empty")
	}
	if cfg.Duration <= 0 && cfg.Turns <= 0 {
		return Result{}, errors.New("loadgen: give Duration or Turns")
	}
	cfg.Clients = max(cfg.Clients, 1)
	if cfg.Model == "" {
		cfg.Model = "capgraph"
	}
	if cfg.Question == nil {
		cfg.Question = func(int, int) string { return "What is the beam current?" }
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	// One keep-alive connection per client, as a browser tab holds one.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Clients,
		MaxIdleConnsPerHost: cfg.Clients,
		MaxConnsPerHost:     cfg.Clients,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	var (
		mu    sync.Mutex
		turns []Turn
		wg    sync.WaitGroup
	)
	start := time.Now()
	stop := start.Add(cfg.Duration)
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Ramp > 0 && c > 0 {
				select {
				case <-time.After(cfg.Ramp * time.Duration(c) / time.Duration(cfg.Clients)):
				case <-ctx.Done():
					return
				}
			}
			for n := 0; ; n++ {
				if ctx.Err() != nil || cfg.Turns > 0 && n >= cfg.Turns || cfg.Turns <= 0 && !time.Now().Before(stop) {
					return
				}
				t := ask(ctx, hc, cfg, c, n, cfg.Question(c, n))
				t.N = n
				mu.Lock()
				turns = append(turns, t)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return Result{Turns: turns, Elapsed: time.Since(start)}, nil
}

// ask sends one question as a new conversation and reads the stream.
func ask(ctx context.Context, hc *http.Client, cfg Config, client, n int, q string) Turn {
	t := Turn{Client: client, Start: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"model": cfg.Model, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": q}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(cfg.BaseURL, "/")+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Err = err
		return t
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	if cfg.Headers != nil {
		for k, vs := range cfg.Headers(client, n) {
			req.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Err, t.Latency = err, time.Since(t.Start)
		return t
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		t.Err, t.Latency = fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b))), time.Since(t.Start)
		return t
	}
	t.Answer, t.Err = readStream(resp.Body)
	t.Latency = time.Since(t.Start)
	if t.Err == nil && cfg.Check != nil {
		t.Err = cfg.Check(t.Answer)
	}
	// Drain what follows [DONE] so the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	return t
}

// readStream reads server-sent events up to [DONE] and returns the content
// of the deltas, joined. An error event, a finish_reason "error", a stream
// that ends without [DONE] or an empty answer is an error.
func readStream(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var answer strings.Builder
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments (heartbeats), event names, blank lines
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			if answer.Len() == 0 {
				return "", errors.New("the stream ended without an answer")
			}
			return answer.String(), nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return "", fmt.Errorf("an event that is not JSON: %.80s", data)
		}
		if chunk.Error != nil {
			return "", fmt.Errorf("error event: %s", chunk.Error.Message)
		}
		for _, c := range chunk.Choices {
			answer.WriteString(c.Delta.Content)
			if c.FinishReason == "error" {
				return "", fmt.Errorf("finish_reason error after %q", answer.String())
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("the stream ended without [DONE]")
}

// Errors counts the failed turns.
func (r Result) Errors() int {
	n := 0
	for _, t := range r.Turns {
		if t.Err != nil {
			n++
		}
	}
	return n
}

// FirstErrors returns up to n distinct error messages, for a report.
func (r Result) FirstErrors(n int) []string {
	var out []string
	for _, t := range r.Turns {
		if t.Err != nil && !slices.Contains(out, t.Err.Error()) {
			out = append(out, t.Err.Error())
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// Latencies returns the latencies of the turns that succeeded, sorted.
func (r Result) Latencies() []time.Duration {
	var out []time.Duration
	for _, t := range r.Turns {
		if t.Err == nil {
			out = append(out, t.Latency)
		}
	}
	slices.Sort(out)
	return out
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted
// durations, nearest rank; 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
