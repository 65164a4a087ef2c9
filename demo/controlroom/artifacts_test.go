package controlroom_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
)

// The history question as operators ask it, through the server's
// frontends, over the control-room plant and the offline agent on SQLite:
// the artifacts its steps return reach every frontend whole.

const (
	opsKey   = "sk-ops-0123456789"
	otherKey = "sk-other-0123456789"
)

var plantNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// site is a server over the demo agent on a SQLite file; start opens it
// again over the same file, as a restarted process would.
type site struct {
	t    *testing.T
	db   string
	now  time.Time
	srv  *httptest.Server
	stop func()
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{t: t, db: filepath.Join(t.TempDir(), "capgraph.db"), now: plantNow}
	s.start()
	return s
}

func (s *site) start() {
	t := s.t
	t.Helper()
	if s.stop != nil {
		s.stop()
	}
	store, err := sqlite.New(sqlite.Config{Path: s.db})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: plantRegistry(t), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := server.ParseAPIKeys("ops=" + opsKey + ",other=" + otherKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Runner: a, Now: func() time.Time { return s.now }, Auth: server.Auth{Principals: keys}})
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(srv.Handler())
	s.stop = func() { s.srv.Close(); store.Close() }
	t.Cleanup(func() {
		if s.stop != nil {
			s.stop()
			s.stop = nil
		}
	})
}

// do sends a request with key ("" for none) and returns status and body.
func (s *site) do(method, path, key string, body any) (int, http.Header, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	u := path
	if !strings.HasPrefix(u, "http") {
		u = s.srv.URL + path
	}
	req, err := http.NewRequest(method, u, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (s *site) chat(key, question string, stream bool) string {
	s.t.Helper()
	status, _, body := s.do("POST", "/v1/chat/completions", key, map[string]any{
		"model": "capgraph", "stream": stream, "messages": []map[string]string{{"role": "user", "content": question}}})
	if status != http.StatusOK {
		s.t.Fatalf("chat completions: %d %s", status, body)
	}
	if !stream {
		var resp struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) != 1 {
			s.t.Fatalf("completion %s: %v", body, err)
		}
		return resp.Choices[0].Message.Content
	}
	var content strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content *string } `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) == nil && len(chunk.Choices) == 1 && chunk.Choices[0].Delta.Content != nil {
			content.WriteString(*chunk.Choices[0].Delta.Content)
		}
	}
	return content.String()
}

var markdownImage = regexp.MustCompile(`!\[[^\]]*\]\((http[^)\s]+)\)`)

// archive is what the plant's archive holds for the question's channels
// over the last 2 hours, as archiver_retrieval reads it.
func archive(t *testing.T) map[string]plant.Series {
	t.Helper()
	p, err := plant.New(plant.Config{Seed: 1, Now: func() time.Time { return plantNow }})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]plant.Series{}
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("SR:RF:CAV%d:VOLT", i)
		s, err := p.History(name, plantNow.Add(-2*time.Hour), plantNow)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

func TestHistoryQuestionThroughChatCompletionsServesItsPlot(t *testing.T) {
	s := newSite(t)
	want := archive(t)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			answer := s.chat(opsKey, "Show me the RF cavity voltage over the last 2 hours", stream)
			// A Markdown table: a row per channel with its points and units.
			for name, series := range want {
				row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \| ` + strconv.Itoa(len(series.Samples)) + ` \| [^|]+ \| [^|]+ \| [^|]+ \| kV \|$`)
				if !row.MatchString(answer) {
					t.Errorf("no table row for %s with %d points:\n%s", name, len(series.Samples), answer)
				}
			}
			if !strings.Contains(answer, "| channel | points | min | max | last | units |") {
				t.Errorf("no table header:\n%s", answer)
			}
			m := markdownImage.FindStringSubmatch(answer)
			if m == nil {
				t.Fatalf("no image in the answer:\n%s", answer)
			}
			img := m[1]
			if !strings.HasPrefix(img, s.srv.URL+"/v1/artifacts/") || !strings.Contains(img, ".svg?") {
				t.Fatalf("image URL %s", img)
			}
			// Without a key (a browser showing the chat): the plot.
			status, h, svg := s.do("GET", img, "", nil)
			if status != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" || h.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Fatalf("GET image: %d %v %.200s", status, h, svg)
			}
			checkPlot(t, svg, want)
			// The owner with its key: the same; another principal: 404.
			if status, _, _ := s.do("GET", img, opsKey, nil); status != http.StatusOK {
				t.Errorf("owner's key: %d", status)
			}
			if status, _, body := s.do("GET", img, otherKey, nil); status != http.StatusNotFound {
				t.Errorf("another principal: %d %s", status, body)
			}
			// PNG at the same address.
			status, h, png := s.do("GET", strings.Replace(img, ".svg?", ".png?", 1), "", nil)
			if status != http.StatusOK || h.Get("Content-Type") != "image/png" || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("GET png: %d %v", status, h)
			}
			// Tampered with: 404.
			u, _ := url.Parse(img)
			for _, bad := range []func(u url.URL) string{
				func(u url.URL) string {
					q := u.Query()
					sig := q.Get("sig")
					first := "A"
					if sig[0] == 'A' {
						first = "B" // a change, whatever the signature starts with
					}
					q.Set("sig", first+sig[1:])
					u.RawQuery = q.Encode()
					return u.String()
				},
				func(u url.URL) string {
					q := u.Query()
					exp, _ := strconv.ParseInt(q.Get("exp"), 10, 64)
					q.Set("exp", strconv.FormatInt(exp+3600, 10))
					u.RawQuery = q.Encode()
					return u.String()
				},
				func(u url.URL) string { u.Path = strings.Replace(u.Path, ".0.svg", ".1.svg", 1); return u.String() },
				func(u url.URL) string { u.RawQuery = ""; return u.String() },
			} {
				if status, _, body := s.do("GET", bad(*u), "", nil); status != http.StatusNotFound {
					t.Errorf("tampered URL %s: %d %s", bad(*u), status, body)
				}
			}
		})
	}
}

// After a restart (a new process over the same store) the URL still
// serves the plot; once it expired, it is 404.
func TestArtifactURLWorksAfterARestartUntilItExpires(t *testing.T) {
	s := newSite(t)
	answer := s.chat(opsKey, "show me the rf cavity voltage over the last 2 hours", false)
	m := markdownImage.FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("no image:\n%s", answer)
	}
	s.start()
	img := strings.Replace(m[1], m[1][:strings.Index(m[1], "/v1/")], s.srv.URL, 1)
	status, _, svg := s.do("GET", img, "", nil)
	if status != http.StatusOK {
		t.Fatalf("after a restart: %d %s", status, svg)
	}
	checkPlot(t, svg, archive(t))
	s.now = s.now.Add(server.DefaultArtifactURLTTL + time.Minute)
	if status, _, body := s.do("GET", img, "", nil); status != http.StatusNotFound {
		t.Fatalf("expired: %d %s", status, body)
	}
}

// checkPlot finds in the SVG one line per channel with every archived
// sample, drawn where its time and value belong (one linear scale for each
// axis, the same for every channel).
func checkPlot(t *testing.T, svg []byte, want map[string]plant.Series) {
	t.Helper()
	var doc struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(svg, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document: %v %.200s", err, svg)
	}
	for name := range want {
		if !bytes.Contains(svg, []byte(">"+name+"</text>")) {
			t.Errorf("the legend does not name %s", name)
		}
	}
	lines := svgLines(t, svg)
	var all []plant.Series
	for _, s := range want {
		all = append(all, s)
	}
	matched := map[string]bool{}
	var ax, bx, ay, by float64
	fitted := false
	for _, pts := range lines {
		for _, s := range all {
			if matched[s.Channel] || len(pts) != len(s.Samples) {
				continue
			}
			if !fitted {
				// The scales from this line's first and last points.
				n := len(pts) - 1
				t0, t1 := float64(s.Samples[0].Time.Unix()), float64(s.Samples[n].Time.Unix())
				ax = (pts[n][0] - pts[0][0]) / (t1 - t0)
				bx = pts[0][0] - ax*t0
				lo, hi := 0, 0
				for i, p := range s.Samples {
					if p.Value < s.Samples[lo].Value {
						lo = i
					}
					if p.Value > s.Samples[hi].Value {
						hi = i
					}
				}
				ay = (pts[hi][1] - pts[lo][1]) / (s.Samples[hi].Value - s.Samples[lo].Value)
				by = pts[lo][1] - ay*s.Samples[lo].Value
			}
			ok := true
			for i, p := range s.Samples {
				x, y := ax*float64(p.Time.Unix())+bx, ay*p.Value+by
				if math.Abs(x-pts[i][0]) > 0.05 || math.Abs(y-pts[i][1]) > 0.05 {
					ok = false
					break
				}
			}
			if ok {
				matched[s.Channel], fitted = true, true
				break
			}
		}
	}
	if len(matched) != len(want) {
		t.Fatalf("the plot draws %d of the %d channels with all their samples where they belong (lines of %v points)", len(matched), len(want), lineLengths(lines))
	}
}

// svgLines are the polylines of the SVG's stroked paths ("M x,y L x,y …").
func svgLines(t *testing.T, svg []byte) [][][2]float64 {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var out [][][2]float64
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "path" {
			continue
		}
		var d, style string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "d":
				d = a.Value
			case "style":
				style = a.Value
			}
		}
		if !strings.Contains(style, "stroke:#") || !strings.Contains(style, "fill:none") {
			continue
		}
		var pts [][2]float64
		for _, seg := range regexp.MustCompile(`[ML]\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)`).FindAllStringSubmatch(d, -1) {
			x, _ := strconv.ParseFloat(seg[1], 64)
			y, _ := strconv.ParseFloat(seg[2], 64)
			pts = append(pts, [2]float64{x, y})
		}
		out = append(out, pts)
	}
	return out
}

func lineLengths(lines [][][2]float64) []int {
	var n []int
	for _, l := range lines {
		if len(l) > 2 {
			n = append(n, len(l))
		}
	}
	return n
}

// Through the native API the artifact event carries every archived sample
// of each channel, the same as the step's context data; the thread's
// artifacts can be read again, by their owner only.
func TestHistoryQuestionThroughTheNativeAPICarriesEverySample(t *testing.T) {
	s := newSite(t)
	if status, _, body := s.do("POST", "/api/threads", opsKey, map[string]any{"id": "rf"}); status != http.StatusCreated {
		t.Fatalf("create thread: %d %s", status, body)
	}
	status, _, body := s.do("POST", "/api/threads/rf/runs", opsKey, map[string]any{"input": "Show me the RF cavity voltage over the last 2 hours", "stream": true})
	if status != http.StatusOK {
		t.Fatalf("run: %d %s", status, body)
	}
	var arts []capabilities.Artifact
	var stepEnd bool
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			continue
		}
		if event == "step_end" && ev.Capability == "archiver_retrieval" {
			stepEnd = true
		}
		if event == "artifact" {
			if !stepEnd || ev.Artifact == nil || ev.Type != agent.EventArtifact {
				t.Fatalf("artifact frame %s (after the step's step_end: %v)", data, stepEnd)
			}
			arts = append(arts, *ev.Artifact)
		}
	}
	var ts *capabilities.Artifact
	for i := range arts {
		if arts[i].Kind == capabilities.ArtifactTimeSeries {
			ts = &arts[i]
		}
	}
	if ts == nil || ts.Capability != "archiver_retrieval" {
		t.Fatalf("no time series artifact in %+v", arts)
	}
	want := archive(t)
	if len(ts.TimeSeries.Series) != len(want) {
		t.Fatalf("%d series, want %d", len(ts.TimeSeries.Series), len(want))
	}
	for _, got := range ts.TimeSeries.Series {
		w, ok := want[got.Name]
		if !ok || got.Units != "kV" || len(got.Values) != len(w.Samples) || len(w.Samples) < 100 {
			t.Fatalf("series %s (%s): %d values, want %d", got.Name, got.Units, len(got.Values), len(w.Samples))
		}
		for i, p := range w.Samples {
			if got.Values[i] != p.Value || got.TimesMs[i] != p.Time.UnixMilli() {
				t.Fatalf("%s sample %d: %v at %d, archived %v at %d", got.Name, i, got.Values[i], got.TimesMs[i], p.Value, p.Time.UnixMilli())
			}
		}
	}
	// The same artifacts from the artifacts route and from the state.
	status, _, body = s.do("GET", "/api/threads/rf/artifacts", opsKey, nil)
	var list struct {
		Thread    string                  `json:"thread_id"`
		Turn      int                     `json:"turn"`
		Artifacts []capabilities.Artifact `json:"artifacts"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Thread != "rf" || list.Turn != 1 || len(list.Artifacts) != len(arts) {
		t.Fatalf("GET artifacts: %d %.300s", status, body)
	}
	status, _, body = s.do("GET", "/api/threads/rf/state", opsKey, nil)
	var ts2 struct {
		State state.State `json:"state"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &ts2) != nil {
		t.Fatalf("GET state: %d", status)
	}
	n := 0
	for _, r := range ts2.State.Turn.Results {
		n += len(r.Artifacts)
	}
	if n != len(arts) {
		t.Fatalf("the state holds %d artifacts, the events carried %d", n, len(arts))
	}
	status, _, body = s.do("GET", "/api/threads/rf/artifacts/"+ts.ID, opsKey, nil)
	var one capabilities.Artifact
	if status != http.StatusOK || json.Unmarshal(body, &one) != nil || one.ID != ts.ID || len(one.TimeSeries.Series[0].Values) != len(want[one.TimeSeries.Series[0].Name].Samples) {
		t.Fatalf("GET artifact: %d %.200s", status, body)
	}
	if status, h, svg := s.do("GET", "/api/threads/rf/artifacts/"+ts.ID+".svg", opsKey, nil); status != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("GET artifact svg: %d %.200s", status, svg)
	} else {
		checkPlot(t, svg, want)
	}
	// Another principal: the thread does not exist.
	for _, p := range []string{"/api/threads/rf/artifacts", "/api/threads/rf/artifacts/" + ts.ID, "/api/threads/rf/artifacts/" + ts.ID + ".png"} {
		if status, _, body := s.do("GET", p, otherKey, nil); status != http.StatusNotFound {
			t.Errorf("another principal GET %s: %d %s", p, status, body)
		}
	}
	// Bad requests name what is wrong.
	for p, want := range map[string]int{
		"/api/threads/rf/artifacts?turn=zero":              http.StatusBadRequest,
		"/api/threads/rf/artifacts?turn=7":                 http.StatusNotFound,
		"/api/threads/rf/artifacts/t9.p1.s1.0":             http.StatusNotFound,
		"/api/threads/rf/artifacts/nonsense":               http.StatusNotFound,
		"/api/threads/rf/artifacts/" + ts.ID + ".gif":      http.StatusNotFound,
		"/api/threads/nope/artifacts":                      http.StatusNotFound,
		"/api/threads/rf/artifacts/" + arts[0].ID + "x.sv": http.StatusNotFound,
	} {
		if status, _, body := s.do("GET", p, opsKey, nil); status != want {
			t.Errorf("GET %s: %d %s, want %d", p, status, body, want)
		}
	}
	if status, _, _ := s.do("GET", "/api/threads/rf/artifacts", "", nil); status != http.StatusUnauthorized {
		t.Errorf("no key: %d", status)
	}
}

// A read through Chat Completions ends with the values as a table.
func TestReadThroughChatCompletionsEndsWithATable(t *testing.T) {
	s := newSite(t)
	answer := s.chat(opsKey, "What is the vacuum pressure in sector 3?", false)
	if !strings.Contains(answer, "| channel | value | units | status |") {
		t.Fatalf("no table:\n%s", answer)
	}
	for _, ch := range []string{"SR:C03:VAC:GAUGE1", "SR:C03:VAC:GAUGE2"} {
		if !regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(ch) + ` \| [0-9.e+-]+ \| Torr \| ok \|$`).MatchString(answer) {
			t.Errorf("no row for %s:\n%s", ch, answer)
		}
	}
	if markdownImage.MatchString(answer) {
		t.Errorf("a table needs no image:\n%s", answer)
	}
}

// The Responses API ends its text with the same Markdown.
func TestHistoryQuestionThroughResponses(t *testing.T) {
	s := newSite(t)
	status, _, body := s.do("POST", "/v1/responses", opsKey, map[string]any{"model": "capgraph", "input": "Show me the RF cavity voltage over the last 2 hours"})
	if status != http.StatusOK {
		t.Fatalf("responses: %d %s", status, body)
	}
	var resp struct {
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Output) == 0 || len(resp.Output[0].Content) == 0 {
		t.Fatalf("response %s: %v", body, err)
	}
	text := resp.Output[0].Content[0].Text
	m := markdownImage.FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, fmt.Sprintf("| SR:RF:CAV1:VOLT | %d |", len(archive(t)["SR:RF:CAV1:VOLT"].Samples))) {
		t.Fatalf("text:\n%s", text)
	}
	if status, _, svg := s.do("GET", m[1], "", nil); status != http.StatusOK {
		t.Fatalf("image: %d", status)
	} else {
		checkPlot(t, svg, archive(t))
	}
	if status, _, _ := s.do("GET", m[1], otherKey, nil); status != http.StatusNotFound {
		t.Fatalf("another principal: %d", status)
	}
}

// The terminal shows the artifacts after the answer: a line per channel
// with a sparkline and min/max/last, a read as an aligned table.
func TestRunPrintsArtifacts(t *testing.T) {
	h := controlRoom(t)
	h.env["COLUMNS"] = "120"
	r := h.run("", "--store", "memory", "run", "Show me the RF cavity voltage over the last 2 hours")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for i := 1; i <= 4; i++ {
		line := regexp.MustCompile(`(?m)^  SR:RF:CAV` + strconv.Itoa(i) + `:VOLT  [▁▂▃▄▅▆▇█]{24}  min [0-9.]+  max [0-9.]+  last [0-9.]+ kV  \(1[0-9]{2} points\)$`)
		if !line.MatchString(r.stdout) {
			t.Errorf("no line for CAV%d:\n%s", i, r.stdout)
		}
	}
	mustContain(t, "run output", r.stdout, "\nArchived values, over the last 2 hours\n", " UTC\n")
	for _, line := range strings.Split(r.stdout, "\n") {
		if n := len([]rune(line)); n > 120 && strings.Contains(line, "SR:RF:CAV") && strings.Contains(line, "▁") {
			t.Errorf("an artifact line of %d characters at COLUMNS=120", n)
		}
	}

	r = h.run("", "--store", "memory", "run", "What is the beam current?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^  channel\s+value units status\n  SR:DCCT:CURRENT\s+[0-9.]+ mA\s+ok$`).MatchString(r.stdout) {
		t.Errorf("no table:\n%s", r.stdout)
	}

	// chat shows them after each answer too.
	r = h.run("show me the rf cavity voltage over the last 2 hours\nwhat is the beam current?\n/exit\n", "chat")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	hist, read := strings.Index(r.stdout, "  SR:RF:CAV4:VOLT  "), strings.Index(r.stdout, "  SR:DCCT:CURRENT ")
	if hist < 0 || read < hist {
		t.Errorf("chat shows no series, then no table:\n%s", r.stdout)
	}
}

// Operators ask for history in many ways, with typos; every one gets its
// table and a plot that serves.
func TestHistoryPhrasingsGetAPlot(t *testing.T) {
	s := newSite(t)
	for _, c := range []struct{ q, channel, title string }{
		{"plot the RF cavity voltage for the past two hours", "SR:RF:CAV1:VOLT", "for the past two hours"},
		{"rf cavity volts last 2h?", "SR:RF:CAV4:VOLT", "last 2h"},
		{"RF cavty voltage history last 2 hours", "SR:RF:CAV2:VOLT", "last 2 hours"},
		{"How did the RF cavity voltage change since yesterday?", "SR:RF:CAV3:VOLT", "since yesterday"},
		{"trend of the beam current over the last hour", "SR:DCCT:CURRENT", "over the last hour"},
		{"graph SR:RF:CAV1:VOLT over the last 30 minutes", "SR:RF:CAV1:VOLT", "over the last 30 minutes"},
	} {
		answer := s.chat(opsKey, c.q, false)
		if !regexp.MustCompile(`(?m)^\| `+regexp.QuoteMeta(c.channel)+` \| \d+ \|`).MatchString(answer) ||
			!strings.Contains(answer, "**Archived values, "+c.title+"**") {
			t.Errorf("%q: no table for %s titled %q:\n%s", c.q, c.channel, c.title, answer)
			continue
		}
		m := markdownImage.FindStringSubmatch(answer)
		if m == nil {
			t.Errorf("%q: no image", c.q)
			continue
		}
		if status, h, svg := s.do("GET", m[1], "", nil); status != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" ||
			!bytes.Contains(svg, []byte(">"+c.channel+"</text>")) {
			t.Errorf("%q: image %d %s", c.q, status, h.Get("Content-Type"))
		}
	}
}

// The orbit question returns the BPMs' profile along the ring beside the
// table, an x–y artifact, and every frontend carries it: the native API's
// artifact event whole (the page draws it: controlroom.test.mjs), Chat
// Completions as a Markdown table of the series and its plot, the terminal as a line
// per plane.
func TestOrbitProfileReachesEveryFrontend(t *testing.T) {
	s := newSite(t)
	if status, _, body := s.do("POST", "/api/threads", opsKey, map[string]any{"id": "orbit"}); status != http.StatusCreated {
		t.Fatalf("create thread: %d %s", status, body)
	}
	status, _, body := s.do("POST", "/api/threads/orbit/runs", opsKey, map[string]any{"input": "Is the orbit ok?", "stream": true})
	if status != http.StatusOK {
		t.Fatalf("run: %d %s", status, body)
	}
	var xy *capabilities.Artifact
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var ev agent.Event
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Artifact != nil && ev.Artifact.Kind == capabilities.ArtifactXY {
			xy = ev.Artifact
		}
	}
	if xy == nil || xy.Capability != "channel_read" || xy.XY.X.Units != "m" || xy.XY.Y.Units != "mm" || len(xy.XY.Series) != 2 {
		t.Fatalf("no orbit artifact in the run's events: %+v", xy)
	}
	for _, sr := range xy.XY.Series {
		if len(sr.X) != 48 || sr.X[0] != 5.5 || sr.X[47] != 522.5 {
			t.Fatalf("series %s: %d points from %v", sr.Name, len(sr.X), sr.X)
		}
		for i, x := range sr.X {
			if i > 0 && x <= sr.X[i-1] {
				t.Fatalf("series %s: positions not along the ring: %v", sr.Name, sr.X)
			}
		}
	}
	if err := xy.Validate(); err != nil {
		t.Fatal(err)
	}

	answer := s.chat(opsKey, "Is the orbit ok?", false)
	for _, want := range []string{"**Orbit along the storage ring", "| series | points | position along the ring from (m) | position along the ring to (m) | beam position min (mm) | beam position max (mm) |",
		"| horizontal | 48 | 5.5 | 522.5 |", "| vertical | 48 | 5.5 | 522.5 |"} {
		if !strings.Contains(answer, want) {
			t.Errorf("Chat Completions answer lacks %q:\n%s", want, answer)
		}
	}
	// Its picture, as for a time series: a signed link that serves the plot.
	var drawn bool
	for _, m := range markdownImage.FindAllStringSubmatch(answer, -1) {
		if status, h, svg := s.do("GET", m[1], "", nil); status == http.StatusOK && h.Get("Content-Type") == "image/svg+xml" &&
			bytes.Contains(svg, []byte(">horizontal</text>")) && bytes.Contains(svg, []byte(">vertical</text>")) {
			drawn = true
		}
	}
	if !drawn {
		t.Errorf("Chat Completions answer has no served picture of the orbit:\n%s", answer)
	}

	h := controlRoom(t)
	h.env["COLUMNS"] = "160"
	r := h.run("", "--store", "memory", "run", "Is the orbit ok?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, plane := range []string{"horizontal", "vertical  "} {
		if !regexp.MustCompile(`(?m)^  ` + plane + `  [▁▂▃▄▅▆▇█]{8,24}  beam position -?[0-9.]+ to -?[0-9.]+ mm  \(48 points, position along the ring 5\.5 to 522\.5 m\)$`).MatchString(r.stdout) {
			t.Errorf("no line for %s:\n%s", plane, r.stdout)
		}
	}
}
