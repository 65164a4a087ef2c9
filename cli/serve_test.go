package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
)

var pageLine = regexp.MustCompile(`web page:\s+(http://\S+)/\n`)

// serve starts on 127.0.0.1:0, prints the web page and the OpenAI base
// URL, answers /healthz, /v1/models and a demo question, and stops when its
// context is canceled.
func TestServeStartsAnswersAndStopsOnCancel(t *testing.T) {
	h := controlRoom(t)
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- h.app.Run(ctx, h.environment(strings.NewReader(""), &stdout, &stderr, []string{"serve", "--addr", "127.0.0.1:0"}))
	}()
	var base string
	deadline := time.Now().Add(30 * time.Second)
	for base == "" {
		if m := pageLine.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s %s", code, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q", stdout.String())
		}
	}
	mustContain(t, "banner", stdout.String(), "OpenAI-compatible base URL:   "+base+"/v1", "offline mode", "store:                        sqlite:", "curl -s "+base+"/v1/chat/completions")

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	mustContain(t, "/healthz", get("/healthz"), `"ok"`)
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(get("/v1/models")), &models); err != nil || len(models.Data) != 1 || models.Data[0].ID != "capgraph" {
		t.Fatalf("/v1/models: %+v %v", models, err)
	}
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"capgraph","messages":[{"role":"user","content":"What is the beam current?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()
	if err != nil || len(chat.Choices) != 1 {
		t.Fatalf("chat completion: %+v %v", chat, err)
	}
	mustContain(t, "answer", chat.Choices[0].Message.Content, "SR:DCCT:CURRENT", "mA")

	cancel()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	mustContain(t, "stderr", stderr.String(), "server stopped")
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still listening after shutdown")
	}
}

func TestServeRefusesPublicAddressWithoutKeys(t *testing.T) {
	r := controlRoom(t).run("", "--store", "memory", "serve", "--addr", "0.0.0.0:0")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "not a loopback address")
}
