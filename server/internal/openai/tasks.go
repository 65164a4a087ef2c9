package openai

import (
	"encoding/json"
	"strings"
)

// Open WebUI sends its background tasks (chat title, tags, follow-up
// suggestions, search queries) as ordinary chat requests to the same model
// unless a task model is configured. Running the agent on them would plan
// and execute capabilities for "Generate a concise title". The guard answers
// them here, cheaply and without the agent.

// frontendTask recognises an Open WebUI task prompt and returns the reply
// Open WebUI parses for it (JSON for title, tags and follow-ups).
func frontendTask(input string) (reply string, ok bool) {
	in := strings.TrimSpace(input)
	if !strings.HasPrefix(in, "### Task:") || !strings.Contains(in, "<chat_history>") {
		return "", false
	}
	task, _, _ := strings.Cut(strings.TrimPrefix(in, "### Task:"), "###")
	task = strings.ToLower(task)
	var v any
	switch {
	case strings.Contains(task, "title"):
		v = map[string]string{"title": titleFrom(in)}
	case strings.Contains(task, "tag"):
		v = map[string][]string{"tags": {"General"}}
	case strings.Contains(task, "follow-up") || strings.Contains(task, "follow up"):
		v = map[string][]string{"follow_ups": {}}
	case strings.Contains(task, "quer"):
		v = map[string][]string{"queries": {}}
	default:
		return "", true
	}
	b, _ := json.Marshal(v) // maps of strings always marshal
	return string(b), true
}

// titleFrom takes the first user line of the chat history as the title.
func titleFrom(prompt string) string {
	_, hist, _ := strings.Cut(prompt, "<chat_history>")
	for _, line := range strings.Split(hist, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "USER:"); ok {
			t := strings.TrimSpace(rest)
			if r := []rune(t); len(r) > 48 {
				t = string(r[:48])
				if i := strings.LastIndex(t, " "); i > 0 {
					t = t[:i] // end at a word
				}
				t = strings.TrimSpace(t) + "…"
			}
			if t != "" {
				return t
			}
		}
	}
	return "New chat"
}
