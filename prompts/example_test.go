package prompts_test

import (
	"fmt"

	"github.com/capgraph/capgraph/prompts"
)

func ExampleNew() {
	set, err := prompts.New(prompts.Config{Overrides: map[string]string{
		prompts.Clarify: "Ask about {{.Task}} in at most {{len .CapabilityOverview}} characters.",
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := set.Render(prompts.Clarify, prompts.ClarifyData{Task: "the vacuum", CapabilityOverview: "• channel_read"})
	fmt.Println(out)

	_, err = prompts.New(prompts.Config{Overrides: map[string]string{"planner": "x"}})
	fmt.Println(err)
	// Output:
	// Ask about the vacuum in at most 16 characters.
	// prompts: template "planner": unknown template (want one of task_extraction, classifier, classifier_batched, task_selection, orchestrator, response, clarify, error, approval, task_extraction_turn, classifier_turn, orchestrator_turn, response_turn, clarify_turn)
}
