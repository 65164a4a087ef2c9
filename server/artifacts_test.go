package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/server/internal/artifacts"
)

// tinyPNG is a 1×1 PNG.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// artifactEnv serves a real offline agent whose one capability returns
// every kind of artifact, one of them over the agent's size limit, and
// text a hostile tool could return.
func artifactEnv(t *testing.T, mod func(*Config)) *testEnv {
	t.Helper()
	c := capabilities.Define(capabilities.Definition{
		Name: "rf_history", Description: "Retrieve the archived history of the RF cavity voltage over a time range",
		Provides: []string{"RF_HISTORY"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for the history of the RF cavity voltage.",
			Examples: []capabilities.ClassifierExample{{Query: "Show me the RF cavity voltage over the last 2 hours", Result: true, Reason: "history"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			small := capabilities.Series{Name: "SR:RF:CAV1:VOLT", Units: "kV"}
			big := capabilities.Series{Name: "SR:RF:CAV1:VOLT", Units: "kV"}
			for i := range 20_000 {
				if i < 30 {
					small.Add(t0.Add(time.Duration(i)*time.Minute), 600+float64(i%5))
				}
				big.Add(t0.Add(time.Duration(i)*time.Second), 600+float64(i%7))
			}
			return capabilities.Result("RF_HISTORY", 1, "RF history retrieved").With(
				capabilities.NewTimeSeries("RF", small),
				capabilities.NewTable("Reads <script>alert(1)</script>", []capabilities.Column{{Name: "channel"}, {Name: "note"}},
					[]any{"SR:RF:CAV1:VOLT", "a | b ![x](https://evil.example/x.png)"}),
				capabilities.NewLink("Logbook", "https://logbook.example.org/entry/42"),
				capabilities.NewFigure("Profile", "image/png", tinyPNG, "beam profile"),
				capabilities.NewTimeSeries("Every second", big),
			), nil
		},
	})
	a, err := agent.New(agent.Config{Registry: newRegistry(t, c), MaxArtifactBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return newTestEnv(t, func(c *Config) {
		c.Runner = a
		if mod != nil {
			mod(c)
		}
	})
}

const historyQ = "Show me the RF cavity voltage over the last 2 hours"

var mdImage = regexp.MustCompile(`!\[([^\]]*)\]\((http[^)\s]+)\)`)

func TestChatAnswerEndsWithEveryKindOfArtifact(t *testing.T) {
	env := artifactEnv(t, nil)
	resp, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(historyQ)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	c := chatContent(t, body)
	for _, want := range []string{
		"| SR:RF:CAV1:VOLT | 30 | 600 | 604 | 604 | kV |",
		"**Reads &lt;script&gt;alert(1)&lt;/script&gt;**",
		`| SR:RF:CAV1:VOLT | a \| b \!\[x\](https://evil.example/x.png) |`,
		"[Logbook](https://logbook.example.org/entry/42)",
		"**Every second**\n\n*This timeseries (",
		`limits.max\_artifact\_bytes`,
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the answer lacks %q:\n%s", want, c)
		}
	}
	imgs := mdImage.FindAllStringSubmatch(c, -1)
	if len(imgs) != 2 || !strings.Contains(imgs[0][2], "/t1.p1.s0.0.svg?") || !strings.Contains(imgs[1][2], "/t1.p1.s0.3.png?") || imgs[1][1] != "beam profile" {
		t.Fatalf("images %q", imgs)
	}
	// The figure is served as it was returned.
	r, png := env.do(t, "GET", strings.TrimPrefix(imgs[1][2], env.http.URL), "", nil)
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/png" || string(png) != string(tinyPNG) {
		t.Fatalf("figure: %d %q", r.StatusCode, png)
	}
	// Its URL with another suffix: 404 (a figure has its own type only).
	if r, _ := env.do(t, "GET", strings.Replace(strings.TrimPrefix(imgs[1][2], env.http.URL), ".png?", ".svg?", 1), "", nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("figure as svg: %d", r.StatusCode)
	}
	// A bad key on a signed URL is refused as anywhere else.
	if r, _ := env.do(t, "GET", strings.TrimPrefix(imgs[0][2], env.http.URL), "sk-wrong-0123456789", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d", r.StatusCode)
	}
	if r, _ := env.do(t, "GET", strings.TrimPrefix(imgs[0][2], env.http.URL), keyBob, nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("bob's key: %d", r.StatusCode)
	}
}

// Hostile and malformed signed URLs: 404 (or 400 from the mux), never 5xx,
// and nothing is served.
func TestSignedArtifactURLRefusesForgeries(t *testing.T) {
	env := artifactEnv(t, nil)
	_, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(historyQ)))
	m := mdImage.FindStringSubmatch(chatContent(t, body))
	if m == nil {
		t.Fatal("no image")
	}
	u, _ := url.Parse(m[2])
	parts := strings.Split(u.Path, "/") // "", v1, artifacts, thread, file
	thread, q := parts[3], u.Query()
	sig, exp := q.Get("sig"), q.Get("exp")
	for _, p := range []string{
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg",                                        // no signature
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg?exp=" + exp,                             // no sig
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg?sig=" + sig,                             // no exp
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg?exp=-1&sig=" + sig,                      // negative
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg?exp=99999999999999999999&sig=" + sig,    // overflow
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg?exp=" + exp + "&sig=" + sig + "x",       // longer sig
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.svg?exp=" + exp + "0&sig=" + sig,            // later exp
		"/v1/artifacts/" + thread + "x/t1.p1.s0.0.svg?exp=" + exp + "&sig=" + sig,            // other thread
		"/v1/artifacts/" + thread + "/t1.p1.s0.1.svg?exp=" + exp + "&sig=" + sig,             // other artifact
		"/v1/artifacts/" + thread + "/t1.p1.s0.0?exp=" + exp + "&sig=" + sig,                 // no suffix
		"/v1/artifacts/" + thread + "/t1.p1.s0.0.exe?exp=" + exp + "&sig=" + sig,             // unknown suffix
		"/v1/artifacts/" + thread + "/..%2F..%2Fetc%2Fpasswd.svg?exp=" + exp + "&sig=" + sig, // traversal
		"/v1/artifacts/%00/%00.svg?exp=" + exp + "&sig=" + sig,
	} {
		r, body := env.do(t, "GET", p, "", nil)
		if r.StatusCode >= 500 || r.StatusCode == http.StatusOK || strings.HasPrefix(r.Header.Get("Content-Type"), "image/") {
			t.Errorf("GET %s: %d %s %.100s", p, r.StatusCode, r.Header.Get("Content-Type"), body)
		}
	}
	// The genuine one works, and only with GET.
	if r, _ := env.do(t, "GET", u.RequestURI(), "", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("genuine: %d", r.StatusCode)
	}
	if r, _ := env.do(t, "POST", u.RequestURI(), "", nil); r.StatusCode == http.StatusOK {
		t.Errorf("POST: %d", r.StatusCode)
	}
}

// The URLs point where browsers reach the server (Config.PublicURL), and
// another server with the same keys (a restart, a replica) accepts them;
// a server with another secret does not.
func TestArtifactURLsUsePublicURLAndSurviveRestarts(t *testing.T) {
	env := artifactEnv(t, func(c *Config) { c.PublicURL = "https://capgraph.example.org/" })
	_, body := env.do(t, "POST", "/v1/chat/completions", keyAlice, chatBody("capgraph", false, user(historyQ)))
	m := mdImage.FindStringSubmatch(chatContent(t, body))
	if m == nil || !strings.HasPrefix(m[2], "https://capgraph.example.org/v1/artifacts/") {
		t.Fatalf("image %q", m)
	}
	path := strings.TrimPrefix(m[2], "https://capgraph.example.org")
	again, err := New(env.srv.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sig := artifacts.Sign(again.artifacts.Key, "th", "t1.p1.s0.0", 5); sig != artifacts.Sign(env.srv.artifacts.Key, "th", "t1.p1.s0.0", 5) {
		t.Fatal("a server with the same keys signs differently")
	}
	cfg := env.srv.cfg
	cfg.ArtifactSecret = []byte("another secret, 16+ bytes")
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if artifacts.Sign(other.artifacts.Key, "th", "t1.p1.s0.0", 5) == artifacts.Sign(env.srv.artifacts.Key, "th", "t1.p1.s0.0", 5) {
		t.Fatal("another secret signs the same")
	}
	if r, _ := env.do(t, "GET", path, "", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, r.StatusCode)
	}
}

func TestArtifactConfigIsChecked(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.ArtifactSecret = []byte("short") }, "ArtifactSecret"},
		{func(c *Config) { c.ArtifactURLTTL = -time.Hour }, "ArtifactURLTTL"},
		{func(c *Config) { c.PublicURL = "capgraph.example.org" }, "PublicURL"},
		{func(c *Config) { c.PublicURL = "javascript:alert(1)" }, "PublicURL"},
		{func(c *Config) { c.PublicURL = "https://cg.example.org/?x=1" }, "PublicURL"},
	} {
		cfg := Config{Runner: newScriptedRunner()}
		c.mod(&cfg)
		_, err := New(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.want {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	srv, err := New(Config{Runner: newScriptedRunner()})
	if err != nil || srv.cfg.ArtifactURLTTL != DefaultArtifactURLTTL {
		t.Fatalf("default TTL: %v %v", srv.cfg.ArtifactURLTTL, err)
	}
}

// AG-UI carries each artifact whole as a CUSTOM event after its step's
// result; the stream still passes the verifier.
func TestAGUICarriesArtifacts(t *testing.T) {
	env := artifactEnv(t, nil)
	resp, body := env.do(t, "POST", "/agui", keyAlice, map[string]any{"threadId": "a1", "runId": "r1", "state": map[string]any{}, "tools": []any{}, "context": []any{},
		"messages": []map[string]any{{"id": "u1", "role": "user", "content": historyQ}}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	evs := verifyAGUI(t, string(body))
	var arts []capabilities.Artifact
	result := -1
	for i, ev := range evs {
		if ev["type"] == "TOOL_CALL_RESULT" && result < 0 {
			result = i
		}
		if ev["type"] != "CUSTOM" || ev["name"] != "artifact" {
			continue
		}
		if result < 0 {
			t.Fatalf("an artifact before its step's result: %v", types(evs))
		}
		b, _ := json.Marshal(ev["value"])
		var a capabilities.Artifact
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		arts = append(arts, a)
	}
	if len(arts) != 5 || arts[0].ID != "t1.p1.s0.0" || len(arts[0].TimeSeries.Series[0].Values) != 30 || arts[1].Table == nil ||
		arts[2].Link == nil || string(arts[3].Figure.Data) != string(tinyPNG) || arts[4].Omitted == "" || arts[4].TimeSeries != nil {
		t.Fatalf("artifacts %+v", arts)
	}
	// The same, from the artifacts route, for alice only.
	r, body := env.do(t, "GET", "/api/threads/a1/artifacts", keyAlice, nil)
	var list struct {
		Artifacts []capabilities.Artifact `json:"artifacts"`
	}
	if r.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Artifacts) != 5 {
		t.Fatalf("GET artifacts: %d %.200s", r.StatusCode, body)
	}
	if r, _ := env.do(t, "GET", "/api/threads/a1/artifacts", keyBob, nil); r.StatusCode != http.StatusNotFound {
		t.Fatalf("bob: %d", r.StatusCode)
	}
}

// A thread created but never run has no artifacts yet (not an error).
func TestArtifactsOfANewThread(t *testing.T) {
	env := artifactEnv(t, nil)
	if r, body := env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "fresh"}); r.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s", r.StatusCode, body)
	}
	r, body := env.do(t, "GET", "/api/threads/fresh/artifacts", keyAlice, nil)
	if r.StatusCode != http.StatusOK || !strings.Contains(string(body), `"artifacts":[]`) {
		t.Fatalf("%d %s", r.StatusCode, body)
	}
}

// /mcp answers with the artifacts too: tables and notes as Markdown after
// the text, the plot and the figure as image content.
func TestMCPAnswerCarriesArtifacts(t *testing.T) {
	env := &mcpEnv{testEnv: artifactEnv(t, nil)}
	cs, err := env.client(t, keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolAsk, Arguments: map[string]any{"question": historyQ}})
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %+v", err, res)
	}
	var text string
	var imgs []*sdk.ImageContent
	for _, c := range res.Content {
		switch x := c.(type) {
		case *sdk.TextContent:
			text += x.Text
		case *sdk.ImageContent:
			imgs = append(imgs, x)
		}
	}
	if !strings.Contains(text, "| SR:RF:CAV1:VOLT | 30 | 600 | 604 | 604 | kV |") || !strings.Contains(text, "[Logbook](https://logbook.example.org/entry/42)") ||
		strings.Contains(text, "/v1/artifacts/") {
		t.Fatalf("text:\n%s", text)
	}
	if len(imgs) != 2 || imgs[0].MIMEType != "image/png" || !strings.HasPrefix(string(imgs[0].Data), "\x89PNG") || string(imgs[1].Data) != string(tinyPNG) {
		t.Fatalf("%d images", len(imgs))
	}

	// A call repeated with its request_id, after its run ended, gets the
	// same answer from the run's record: the text and every figure.
	args := map[string]any{"question": historyQ, "request_id": "history-1"}
	first, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolAsk, Arguments: args})
	if err != nil || first.IsError {
		t.Fatalf("ask: %v %+v", err, first)
	}
	waitRuns(t, env.testEnv)
	again, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: mcp.ToolAsk, Arguments: args})
	if err != nil || again.IsError {
		t.Fatalf("repeat: %v %+v", err, again)
	}
	a, _ := json.Marshal(first.Content)
	b, _ := json.Marshal(again.Content)
	if string(a) != string(b) || len(again.Content) != 3 || !strings.Contains(fmt.Sprint(again.StructuredContent), "replayed:true") {
		t.Fatalf("the repeat's answer differs: %d items, %v\n%.300s\n%.300s", len(again.Content), again.StructuredContent, a, b)
	}
}
