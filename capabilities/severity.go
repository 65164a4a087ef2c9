package capabilities

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Severity says how the agent recovers from a failure.
type Severity uint8

const (
	// SeverityUnset is the zero value; treated as Critical where a decision is needed.
	SeverityUnset Severity = iota
	// Retriable: run the same step again under its retry policy.
	Retriable
	// Replanning: ask the orchestrator for a new plan.
	Replanning
	// Reclassification: ask the classifier to select capabilities again.
	Reclassification
	// Critical: stop recovering; the error node writes a report and an explanation.
	Critical
	// Fatal: abort the run with a typed error, without the error node.
	Fatal
)

var severityNames = [...]string{
	SeverityUnset: "", Retriable: "retriable", Replanning: "replanning",
	Reclassification: "reclassification", Critical: "critical", Fatal: "fatal",
}

// String returns the lower-case name ("retriable", ...).
func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("severity(%d)", uint8(s))
}

// ParseSeverity parses a severity name, case-insensitively.
func ParseSeverity(s string) (Severity, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	for i, n := range severityNames {
		if n != "" && n == l {
			return Severity(i), nil
		}
	}
	return SeverityUnset, fmt.Errorf("capabilities: unknown severity %q (want retriable, replanning, reclassification, critical or fatal)", s)
}

// MarshalJSON encodes the severity as its lower-case name.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON decodes a lower-case name; "" is SeverityUnset.
func (s *Severity) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("capabilities: severity must be a string: %w", err)
	}
	if str == "" {
		*s = SeverityUnset
		return nil
	}
	v, err := ParseSeverity(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}
