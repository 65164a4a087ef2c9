package server

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// decodeAPIError reads an error body as Open WebUI and LibreChat do: the
// JSON object's error.message is what they show the user.
func decodeAPIError(t *testing.T, resp *http.Response, body []byte) apiErr {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("content type %q: the UIs read the error from a JSON body: %s", ct, body)
	}
	e := decodeErr(t, body)
	if e.Error.Message == "" {
		t.Fatalf("no error.message: %s", body)
	}
	return e
}

// "Continue" (Open WebUI's "Continue Response", LibreChat's "Continue")
// sends the conversation with the assistant's answer last. capgraph's
// answers are whole: a 400 whose message both UIs display says so, before
// any stream starts, and no run is made.
func TestChatContinueIsA400TheUIsShow(t *testing.T) {
	env := newTestEnv(t, nil)
	answer := "Beam current is 500 mA."
	owui := openWebUIRequest(nil, "What is the beam current?")
	owui["messages"] = append(owui["messages"].([]map[string]any), assistant(answer))
	libre := map[string]any{"model": "capgraph", "stream": true, "temperature": 1, "top_p": 1,
		"messages": []map[string]any{user("What is the beam current?"), assistant(answer)}}
	for name, req := range map[string]struct {
		key  string
		body map[string]any
		hdr  []string
	}{"Open WebUI": {keyWebUI, owui, openWebUIHeaders}, "LibreChat": {keyAlice, libre, nil}} {
		resp, body := env.do(t, "POST", "/v1/chat/completions", req.key, req.body, req.hdr...)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
		}
		e := decodeAPIError(t, resp, body)
		if !strings.Contains(e.Error.Message, "cannot continue an answer") || !strings.Contains(e.Error.Message, "Send a new message") ||
			e.Error.Param == nil || !strings.HasSuffix(*e.Error.Param, ".role") {
			t.Errorf("%s: %+v", name, e.Error)
		}
	}
	if n := len(env.runner.runs()); n != 0 {
		t.Fatalf("%d runs for a continue", n)
	}
}

// An image (or file) part is not read: the answer to the text says so at
// its end, streamed and not; a message of images alone is a 400 naming
// why.
func TestChatImagePartsAreNotedAsNotRead(t *testing.T) {
	env := newTestEnv(t, nil)
	withImage := func(stream bool, parts ...map[string]any) map[string]any {
		return map[string]any{"model": "capgraph", "stream": stream, "messages": []map[string]any{{"role": "user", "content": parts}}}
	}
	text := map[string]any{"type": "text", "text": "What is the beam current?"}
	img := map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}}
	const note = "*(The image or file attached to your message was not read: capgraph reads only the text of a message.)*"

	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, withImage(false, text, img))
	if c := chatContent(t, body); resp.StatusCode != http.StatusOK || c != "Beam current is 500 mA.\n\n"+note {
		t.Fatalf("%d %q", resp.StatusCode, c)
	}
	_, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, withImage(true, text, img, img))
	if v := parseLikeOpenWebUI(t, string(body)); !v.Done || !strings.HasPrefix(v.Content, "Beam current is 500 mA.\n\n") ||
		!strings.HasSuffix(v.Content, "*(The 2 images or files attached to your message were not read: capgraph reads only the text of a message.)*") {
		t.Fatalf("stream %+v", v)
	}
	// Without an image, no note.
	_, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, withImage(false, text))
	if c := chatContent(t, body); c != "Beam current is 500 mA." {
		t.Fatalf("no image: %q", c)
	}
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, withImage(false, img))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(decodeAPIError(t, resp, body).Error.Message, "reads only the text of a message, not images") {
		t.Fatalf("image only: %d %s", resp.StatusCode, body)
	}
}

// response_format: text is what the agent writes; a JSON format is
// refused with a 400 naming it, never accepted and ignored.
func TestChatResponseFormat(t *testing.T) {
	env := newTestEnv(t, nil)
	for _, tc := range []struct {
		format map[string]any
		status int
	}{
		{map[string]any{"type": "json_object"}, http.StatusBadRequest},
		{map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "object"}}}, http.StatusBadRequest},
		{map[string]any{"type": "text"}, http.StatusOK},
	} {
		b := chatBody("capgraph", false, user("What is the beam current?"))
		b["response_format"] = tc.format
		resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, b)
		if resp.StatusCode != tc.status {
			t.Fatalf("%v: %d %s", tc.format, resp.StatusCode, body)
		}
		if tc.status == http.StatusOK {
			continue
		}
		e := decodeAPIError(t, resp, body)
		typ, _ := json.Marshal(tc.format["type"])
		if e.Error.Param == nil || *e.Error.Param != "response_format" || !strings.Contains(e.Error.Message, string(typ)) {
			t.Errorf("%v: %+v", tc.format, e.Error)
		}
	}
}

// One status line per phase: the line at a node's start and the node's
// own status ("Planning", then "Planning…") are one line in Open WebUI,
// on the real agent.
func TestChatOneStatusLinePerPhase(t *testing.T) {
	env := newWebEnv(t)
	for _, q := range []string{"What is the beam current?", "how did the beam lifetime change in the last hour?", "what is the vacuum gauge pressure?"} {
		resp, body := env.do(t, "POST", "/v1/chat/completions", keyWebUI, openWebUIRequest(nil, q), openWebUIHeaders...)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: %d %s", q, resp.StatusCode, body)
		}
		v := parseLikeOpenWebUI(t, string(body))
		if len(v.Statuses) < 3 {
			t.Fatalf("%q: statuses %+v", q, v.Statuses)
		}
		seen := map[string]bool{}
		for i, st := range v.Statuses {
			key := strings.TrimRight(st.Description, "…")
			if i > 0 && key == strings.TrimRight(v.Statuses[i-1].Description, "…") {
				t.Errorf("%q: status %q repeated: %+v", q, st.Description, v.Statuses)
			}
			seen[key] = true
		}
		if !seen["Writing the answer"] && !seen["Explaining what went wrong"] {
			t.Errorf("%q: no answer phase in %+v", q, v.Statuses)
		}
	}
}

// librechatEndpoint is the part of a librechat.yaml custom endpoint that
// decides what LibreChat sends.
type librechatEndpoint struct {
	Name    string `yaml:"name"`
	BaseURL string `yaml:"baseURL"`
	Models  struct {
		Default []string `yaml:"default"`
		Fetch   bool     `yaml:"fetch"`
	} `yaml:"models"`
	TitleConvo    bool     `yaml:"titleConvo"`
	TitleModel    string   `yaml:"titleModel"`
	TitleEndpoint string   `yaml:"titleEndpoint"`
	DropParams    []string `yaml:"dropParams"`
}

// docSection returns the first fenced block of lang under heading in a doc.
func docSection(t *testing.T, path, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("%s: no %q", path, heading)
	}
	doc = doc[i:]
	start := strings.Index(doc, "```"+lang+"\n")
	if start < 0 {
		t.Fatalf("%s: no %s block under %q", path, lang, heading)
	}
	doc = doc[start+len("```"+lang+"\n"):]
	return doc[:strings.Index(doc, "```")]
}

// The LibreChat section of docs/frontends.md, as LibreChat uses it: its
// endpoint YAML read as LibreChat reads it, then what LibreChat sends with
// it — the model list, a chat request with the default model and without
// the dropped parameters, a continue — and no title request the agent
// would answer (titleConvo off, or titles from another endpoint). The
// setting the section warns against (titleModel alone on this endpoint)
// is answered 404, as it says.
func TestLibreChatSectionAsLibreChatSendsIt(t *testing.T) {
	var cfg struct {
		Endpoints struct {
			Custom []librechatEndpoint `yaml:"custom"`
		} `yaml:"endpoints"`
	}
	if err := yaml.Unmarshal([]byte(docSection(t, "../docs/frontends.md", "### LibreChat, step by step", "yaml")), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Endpoints.Custom) != 1 {
		t.Fatalf("endpoints %+v", cfg.Endpoints)
	}
	ep := cfg.Endpoints.Custom[0]
	if !strings.HasSuffix(ep.BaseURL, "/v1") || len(ep.Models.Default) == 0 {
		t.Fatalf("endpoint %+v", ep)
	}
	if ep.TitleConvo && (ep.TitleEndpoint == "" || ep.TitleEndpoint == ep.Name) {
		t.Fatalf("titleConvo on with titles from this endpoint (%+v): LibreChat would ask capgraph for them", ep)
	}
	env := newTestEnv(t, nil)
	resp, body := env.do(t, "GET", "/v1/models", keyAlice, nil)
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("models %d %s", resp.StatusCode, body)
	}
	for _, m := range ep.Models.Default {
		if !slices.ContainsFunc(models.Data, func(d struct {
			ID string `json:"id"`
		}) bool {
			return d.ID == m
		}) {
			t.Errorf("default model %q not in /v1/models %s", m, body)
		}
	}
	// The chat request: LibreChat's parameters, less the dropped ones.
	req := map[string]any{"model": ep.Models.Default[0], "stream": true, "user": "6650f0c0c0ffee", "stop": []string{"\n\nUser:"},
		"temperature": 1, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0,
		"messages": []map[string]any{user("What is the beam current?")}}
	for _, p := range ep.DropParams {
		delete(req, p)
	}
	if _, ok := req["user"]; ok {
		t.Errorf("dropParams %v keep user: the end user's LibreChat id would be sent as the agent's user", ep.DropParams)
	}
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, req)
	if v := parseLikeOpenWebUI(t, string(body)); resp.StatusCode != http.StatusOK || v.Content != "Beam current is 500 mA." || !v.Done {
		t.Fatalf("chat %d %+v", resp.StatusCode, v)
	}
	// Continue: the answer last; a 400 LibreChat shows.
	req["messages"] = []map[string]any{user("What is the beam current?"), assistant("Beam current is 500 mA.")}
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, req)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(decodeAPIError(t, resp, body).Error.Message, "cannot continue an answer") {
		t.Fatalf("continue %d %s", resp.StatusCode, body)
	}
	// The wrong setting: titleModel on this endpoint sends LibreChat's
	// title request for that model here.
	title := map[string]any{"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 16, "messages": []map[string]any{
		{"role": "system", "content": "Write a concise title for this conversation."},
		{"role": "user", "content": "User: What is the beam current?\nAI: Beam current is 500 mA."}}}
	resp, body = env.do(t, "POST", "/v1/chat/completions", keyAlice, title)
	if e := decodeErr(t, body); resp.StatusCode != http.StatusNotFound || e.Error.Code != "model_not_found" {
		t.Fatalf("titleModel on capgraph: %d %s", resp.StatusCode, body)
	}
}

// The Responses API does the same: images and files beside the text are
// answered with the note; a message of images alone is a 400.
func TestResponsesImagePartsAreNotedAsNotRead(t *testing.T) {
	env := newTestEnv(t, nil)
	input := func(parts ...map[string]any) map[string]any {
		return map[string]any{"model": "capgraph", "input": []any{map[string]any{"role": "user", "content": parts}}}
	}
	text := map[string]any{"type": "input_text", "text": "What is the beam current?"}
	img := map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
	resp, body := env.do(t, "POST", "/v1/responses", keyAlice, input(text, img))
	if got := outputText(t, body); resp.StatusCode != http.StatusOK ||
		got != "Beam current is 500 mA.\n\n*(The image or file attached to your message was not read: capgraph reads only the text of a message.)*" {
		t.Fatalf("%d %q", resp.StatusCode, got)
	}
	if _, body := env.do(t, "POST", "/v1/responses", keyAlice, input(text)); outputText(t, body) != "Beam current is 500 mA." {
		t.Fatalf("no image: %s", body)
	}
	resp, body = env.do(t, "POST", "/v1/responses", keyAlice, input(img))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "reads only the text of a message, not images") {
		t.Fatalf("image only: %d %s", resp.StatusCode, body)
	}
}
