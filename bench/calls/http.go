package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/demo/controlroom"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

const apiKey = "calls-benchmark-key-0123"

// A frontend is a streaming HTTP API: the request for a question, and
// whether an SSE data line carries answer text.
type frontend struct {
	name    string
	path    string
	body    func(model, question string, n int) any
	isToken func(event, data string) bool
}

var frontends = []frontend{
	{"Chat Completions", "/v1/chat/completions",
		func(model, q string, _ int) any {
			return map[string]any{"model": model, "stream": true, "messages": []map[string]any{{"role": "user", "content": q}}}
		},
		func(_, data string) bool {
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			return json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != ""
		}},
	{"Responses", "/v1/responses",
		func(model, q string, _ int) any { return map[string]any{"model": model, "stream": true, "input": q} },
		func(event, _ string) bool { return event == "response.output_text.delta" }},
	{"AG-UI (the page)", "/agui",
		func(_, q string, n int) any {
			return map[string]any{"threadId": fmt.Sprintf("agui-%d", n), "runId": "r1", "state": map[string]any{}, "tools": []any{}, "context": []any{},
				"messages": []map[string]any{{"id": "u1", "role": "user", "content": q}}}
		},
		func(_, data string) bool { return strings.Contains(data, `"TEXT_MESSAGE_CONTENT"`) }},
}

// measureHTTP serves the control-room application as `capgraph serve`
// does, on each path, and times the read's first answer token through each
// streaming frontend, from sending the request.
func measureHTTP(latency time.Duration, repeat int) error {
	fmt.Println("## The first answer token through the server (read, first turn, 4 capabilities)")
	fmt.Println()
	fmt.Println("| frontend | path | TTFT | turn |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, p := range paths {
		calls := ""
		if p.name != "default" {
			calls = "model_calls:\n  task_extraction: always\n  select_all_within_tokens: -1\n  task_with_selection: false\n"
		}
		base, stop, err := serve(calls, latency)
		if err != nil {
			return err
		}
		model, err := modelID(base)
		if err != nil {
			stop()
			return err
		}
		for _, fe := range frontends {
			var ttfts, totals []time.Duration
			for i := range repeat {
				ttft, total, err := stream(base, fe, model, i)
				if err != nil {
					stop()
					return fmt.Errorf("%s, %s: %w", fe.name, p.name, err)
				}
				ttfts, totals = append(ttfts, ttft), append(totals, total)
			}
			inL := func(d time.Duration) string {
				return fmt.Sprintf("%d ms (%.2f L)", d.Milliseconds(), float64(d)/float64(latency))
			}
			fmt.Printf("| %s | %s | %s | %s |\n", fe.name, p.name, inL(median(ttfts)), inL(median(totals)))
		}
		stop()
	}
	fmt.Println()
	return nil
}

// serve starts the application's server on a loopback port with the
// scripted model; stop shuts it down.
func serve(extra string, latency time.Duration) (base string, stop func(), err error) {
	yaml := fmt.Sprintf("server:\n  api_keys:\n    - name: bench\n      key: %s\n  limits:\n    duplicate_window: never\nlogging:\n  level: error\n%s", apiKey, extra)
	cfg, err := config.Parse([]byte(yaml), "calls.yaml")
	if err != nil {
		return "", nil, err
	}
	app := controlroom.App()
	rt, err := wiring.New(cfg, wiring.App{Name: app.Name, Capabilities: app.Capabilities}, wiring.Options{Store: "memory", Models: newModel(latency)})
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	logger, err := rt.Logger(io.Discard)
	if err == nil {
		var sc server.Config
		if sc, err = rt.ServerConfig(ctx, logger); err == nil {
			var srv *server.Server
			if srv, err = server.New(sc); err == nil {
				var ln net.Listener
				if ln, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
					done := make(chan struct{})
					go func() { srv.Serve(ctx, ln); close(done) }()
					return "http://" + ln.Addr().String(), func() { cancel(); <-done; rt.Close() }, nil
				}
			}
		}
	}
	cancel()
	rt.Close()
	return "", nil, err
}

func request(method, url string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return resp, err
}

// modelID is the first model the server lists.
func modelID(base string) (string, error) {
	resp, err := request("GET", base+"/v1/models", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("model list: %v", err)
	}
	return list.Data[0].ID, nil
}

// stream sends the read through fe and returns when its first answer text
// came and when the stream ended.
func stream(base string, fe frontend, model string, n int) (ttft, total time.Duration, err error) {
	start := time.Now()
	resp, err := request("POST", base+fe.path, fe.body(model, "What is the beam current?", n))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if ttft == 0 && fe.isToken(event, strings.TrimPrefix(line, "data: ")) {
				ttft = time.Since(start)
			}
		case line == "":
			event = ""
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if ttft == 0 {
		return 0, 0, fmt.Errorf("no answer text streamed")
	}
	return ttft, time.Since(start), nil
}
