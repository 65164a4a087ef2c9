package capabilities

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Conventional metadata keys of a Classification. All metadata is shown to the
// LLM that plans the recovery or explains the failure.
const (
	MetaTechnicalDetails       = "technical_details"
	MetaSuggestions            = "suggestions"
	MetaReplanningReason       = "replanning_reason"
	MetaReclassificationReason = "reclassification_reason"
	MetaSafetyAbortReason      = "safety_abort_reason"
	// MetaOutcome is the write outcome (Outcome) of a side-effecting step
	// that ended mismatch or unconfirmed: the error report says what to check.
	MetaOutcome = "outcome"
)

// Classification is the verdict on one failure: how to recover and what to
// tell the user.
type Classification struct {
	Severity    Severity       `json:"severity"`
	UserMessage string         `json:"user_message,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	// Kind is the error kind (see Kind* constants); a retry policy's
	// NonRetryable list matches it.
	Kind string `json:"kind,omitempty"`
	// RetryAfter, when positive, overrides the computed retry delay (a server's
	// Retry-After).
	RetryAfter Duration `json:"retry_after,omitempty"`
}

// FormatForLLM renders the classification as markdown lines for a prompt.
func (c Classification) FormatForLLM() string {
	var b strings.Builder
	b.WriteString("**Previous Execution Error:**\n")
	fmt.Fprintf(&b, "- **Severity:** %s\n", c.Severity)
	if c.UserMessage != "" {
		fmt.Fprintf(&b, "- **User Message:** %s\n", c.UserMessage)
	}
	if c.RetryAfter > 0 {
		fmt.Fprintf(&b, "- **Retry After:** %s\n", time.Duration(c.RetryAfter))
	}
	keys := make([]string, 0, len(c.Metadata))
	for k := range c.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- **%s:** %s\n", titleKey(k), formatMetaValue(c.Metadata[k]))
	}
	return strings.TrimRight(b.String(), "\n")
}

func titleKey(k string) string {
	parts := strings.Split(k, "_")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, " ")
}

func formatMetaValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []string:
		return strings.Join(x, ", ")
	case []any:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = fmt.Sprint(e)
		}
		return strings.Join(s, ", ")
	case map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}
