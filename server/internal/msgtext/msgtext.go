package msgtext

import (
	"encoding/json"
	"strings"
)

// Of returns a message content's text: a string content, or the text parts
// of an array content (images and files are skipped).
func Of(content json.RawMessage) (string, error) {
	c := json.RawMessage(strings.TrimSpace(string(content)))
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		err := json.Unmarshal(c, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}
