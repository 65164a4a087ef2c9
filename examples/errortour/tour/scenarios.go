package tour

import "strings"

// Scenario is one stop of the tour.
type Scenario struct {
	// Keyword in a question selects the scenario.
	Keyword string
	// Capability that plays it.
	Capability  string
	Description string
	// Severity the failure has ("retriable", …; "resource exhaustion" is
	// CRITICAL with kind resource_exhausted).
	Severity string
	// Question to ask.
	Question string
	// Outcome is what the user should see.
	Outcome string
}

// Scenarios lists the tour in the order to take it.
var Scenarios = []Scenario{
	{Keyword: "flaky", Capability: "flaky_sensor", Severity: "retriable",
		Description: "Reads the flaky sensor, which times out twice before answering.",
		Question:    "Read the flaky sensor",
		Outcome:     "two retries after short delays, then an answer that says it recovered"},
	{Keyword: "dead", Capability: "dead_sensor", Severity: "retriable",
		Description: "Reads the dead sensor, which never answers.",
		Question:    "Read the dead sensor",
		Outcome:     "three attempts, then the error report: retries exhausted"},
	{Keyword: "moved", Capability: "moved_sensor", Severity: "replanning",
		Description: "Reads the moved sensor, whose address changes once, so the first plan fails.",
		Question:    "Read the moved sensor",
		Outcome:     "a new plan, then an answer"},
	{Keyword: "misrouted", Capability: "misrouted_request", Severity: "reclassification",
		Description: "Sends a misrouted request, which asks for capabilities to be selected again the first time.",
		Question:    "Send the misrouted request",
		Outcome:     "capabilities selected again, a new plan, then an answer"},
	{Keyword: "interlock", Capability: "interlocked_valve", Severity: "critical",
		Description: "Opens the interlocked valve, which a safety interlock blocks.",
		Question:    "Open the interlock valve",
		Outcome:     "no retry; the error report with the interlock and a suggestion"},
	{Keyword: "corrupt", Capability: "corrupt_state", Severity: "fatal",
		Description: "Touches the corrupt state, which aborts the run.",
		Question:    "Check the corrupt state",
		Outcome:     "the run stops with a typed error and a one-line reason; no LLM explanation"},
	{Keyword: "quota", Capability: "quota_hog", Severity: "critical (resource_exhausted)",
		Description: "Runs the quota hog, which exhausts its disk quota.",
		Question:    "Run the quota hog",
		Outcome:     "the run pauses and asks a human whether to retry once the resource is available"},
	{Keyword: "primary", Capability: "primary_source", Severity: "critical, absorbed by a fallback",
		Description: "Reads the primary source, which is offline; backup_sensor stands in.",
		Question:    "Read the primary source",
		Outcome:     "the fallback backup_sensor answers and the answer says so"},
}

// ScenarioFor returns the scenario whose keyword appears in a question.
func ScenarioFor(question string) (Scenario, bool) {
	q := strings.ToLower(question)
	for _, s := range Scenarios {
		if strings.Contains(q, s.Keyword) {
			return s, true
		}
	}
	return Scenario{}, false
}
