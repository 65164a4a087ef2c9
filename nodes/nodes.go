package nodes

import "errors"

// Set holds the five infrastructure nodes built from one Config.
type Set struct {
	TaskExtraction *TaskExtractionNode
	Classifier     *ClassifierNode
	Orchestrator   *OrchestratorNode
	Respond        *RespondNode
	Clarify        *ClarifyNode
}

// New builds every infrastructure node from one Config.
func New(cfg Config) (*Set, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	te, err1 := NewTaskExtraction(cfg)
	cl, err2 := NewClassifier(cfg)
	or, err3 := NewOrchestrator(cfg)
	re, err4 := NewRespond(cfg)
	ca, err5 := NewClarify(cfg)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, err
	}
	return &Set{TaskExtraction: te, Classifier: cl, Orchestrator: or, Respond: re, Clarify: ca}, nil
}

// All lists the nodes in graph order.
func (s *Set) All() []Node {
	return []Node{s.TaskExtraction, s.Classifier, s.Orchestrator, s.Respond, s.Clarify}
}
