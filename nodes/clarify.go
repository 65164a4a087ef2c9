package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// questionsShape is the reply clarify expects.
const questionsShape = "one to four numbered questions, one per line (\"1. ...\")"

// maxQuestions caps the clarifying questions.
const maxQuestions = 4

// ClarifyNode asks the user clarifying questions.
type ClarifyNode struct{ base }

// NewClarify returns the clarify node.
func NewClarify(cfg Config) (*ClarifyNode, error) {
	b, err := newBase(cfg, state.NodeClarify)
	if err != nil {
		return nil, err
	}
	return &ClarifyNode{b}, nil
}

// Run writes the turn's one assistant message (kind clarification): one to
// four numbered questions. It uses the response role's model.
func (n *ClarifyNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	t := cloneTurn(s.Turn)
	task := taskText(t)
	graph.Emit(ctx, Status{Node: n.name, Text: "Asking for clarification…"})
	data := prompts.ClarifyData{Task: task, History: history(s), Reason: clarifyReason(t), CapabilityOverview: n.cfg.Registry.Overview()}
	var (
		questions []string
		calls     []call
		offline   = true
	)
	if n.online(llm.RoleResponse) {
		p, err := n.prompt(prompts.Clarify, data)
		if err != nil {
			return state.Update{}, err
		}
		c, err := n.generate(ctx, llm.RoleResponse, p.System, p.Turn, nil, nil)
		if err != nil {
			return state.Update{Tokens: tokens(llm.RoleResponse, c)}, err
		}
		calls = append(calls, c)
		offline = c.offline
		if !offline {
			questions = parseQuestions(c.text)
			if len(questions) == 0 {
				return state.Update{Tokens: tokens(llm.RoleResponse, c)}, formatError(n.name, "the reply contains no numbered question", questionsShape, c.text, nil)
			}
		}
	}
	if offline {
		questions = offlineQuestions(n.cfg.Registry.Names())
	}
	var b strings.Builder
	if offline {
		b.WriteString(OfflineNotice + "\n\n")
	}
	for i, q := range questions {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d. %s", i+1, q)
	}
	text := b.String()
	graph.Emit(ctx, Token{Node: n.name, Text: text})
	return finish(t, n.name, n.cfg.Now(), text, state.KindClarification, calls, llm.RoleResponse), nil
}

func clarifyReason(t state.Turn) string {
	if t.Plan == nil {
		return ""
	}
	for _, st := range t.Plan.Steps {
		if st.Capability == state.NodeClarify && st.Status == state.StepPending {
			return st.TaskObjective
		}
	}
	return ""
}

// parseQuestions keeps numbered or bulleted lines ("1. ", "2) ", "- "),
// without their markers, at most four.
func parseQuestions(reply string) []string {
	var out []string
	for _, line := range strings.Split(reply, "\n") {
		l := strings.TrimSpace(line)
		q, ok := strings.CutPrefix(l, "- ")
		if !ok {
			i := 0
			for i < len(l) && l[i] >= '0' && l[i] <= '9' {
				i++
			}
			if i == 0 || i >= len(l) || (l[i] != '.' && l[i] != ')') {
				continue
			}
			q = l[i+1:]
		}
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
		if len(out) == maxQuestions {
			break
		}
	}
	return out
}

func offlineQuestions(caps []string) []string {
	var names []string
	for _, c := range caps {
		if !isTerminal(c) {
			names = append(names, c)
		}
	}
	q := []string{"What exactly should I do? Please name the device, channel or place and the time range if one matters."}
	if len(names) > 0 {
		q = append(q, fmt.Sprintf("Which of these fits your request: %s?", strings.Join(names, ", ")))
	}
	return q
}
