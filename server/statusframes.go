package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// StatusFrames says whether Chat Completions streams carry Open WebUI's
// status frames ({"event":{"type":"status",…}} chunks without "choices").
// Open WebUI shows them as the live status line; clients that validate
// every chunk against the OpenAI schema (the Vercel AI SDK) turn each one
// into an error, so by default they go only to Open WebUI.
type StatusFrames string

const (
	// StatusFramesAuto (the default, also for "") sends them when the
	// request comes from Open WebUI (detectOpenWebUI).
	StatusFramesAuto StatusFrames = "auto"
	// StatusFramesOn always sends them.
	StatusFramesOn StatusFrames = "on"
	// StatusFramesOff never sends them.
	StatusFramesOff StatusFrames = "off"
)

// valid reports whether v is one of the three values or empty (auto).
func (v StatusFrames) valid() bool {
	switch v {
	case "", StatusFramesAuto, StatusFramesOn, StatusFramesOff:
		return true
	}
	return false
}

func checkStatusFrames(field string, v StatusFrames) error {
	if !v.valid() {
		return &ConfigError{Field: field, Reason: fmt.Sprintf("%q: want auto, on or off", string(v))}
	}
	return nil
}

// sendStatusFrames decides for one Chat Completions request: the key's
// setting when it has one, else the server's; auto detects Open WebUI.
func (s *Server) sendStatusFrames(r *http.Request, c caller, user json.RawMessage) bool {
	v := c.Principal.StatusFrames
	if v == "" {
		v = s.cfg.StatusFrames
	}
	switch v {
	case StatusFramesOn:
		return true
	case StatusFramesOff:
		return false
	}
	return detectOpenWebUI(r.Header, user)
}

// detectOpenWebUI recognises a request of Open WebUI's backend by what it
// really sends (routers/openai.py; the clients send nothing like it):
//
//   - any X-OpenWebUI-* header (ENABLE_FORWARD_USER_INFO_HEADERS, which
//     the docs ask operators to turn on for the chat id);
//   - "user" as an object {name, id, email, role}: Open WebUI's form for
//     pipeline models (the OpenAI spec has a string);
//   - the User-Agent of its HTTP client, aiohttp ("Python/3.x aiohttp/3.y"):
//     the official SDKs, LangChain and LiteLLM send their own names, and
//     the browser-side direct connections of Open WebUI ignore the frames
//     anyway.
func detectOpenWebUI(h http.Header, user json.RawMessage) bool {
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "x-openwebui-") {
			return true
		}
	}
	if u := bytes.TrimSpace(user); len(u) > 0 && u[0] == '{' {
		return true
	}
	ua := h.Get("User-Agent")
	return strings.HasPrefix(ua, "Python/") && strings.Contains(ua, " aiohttp/")
}
