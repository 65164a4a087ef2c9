package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/replytext"
)

// Judge grades answers against a case's rubric. It is configured apart
// from the agent and must not be a model under test: Run refuses a judge
// whose Name is among Target.ModelNames, or whose Model is one the agent's
// roles use.
type Judge struct {
	Model llm.Model
	// Name identifies the judge's model as Target.ModelNames name the
	// agent's ("openai/gpt-4o-mini at https://…").
	Name string
}

// ErrJudgeUnderTest: the judge is one of the models under test.
var ErrJudgeUnderTest = errors.New("eval: the judge model is a model under test; configure a different judge")

// verdict is the judge's reply.
type verdict struct {
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

const judgePrompt = `You grade one answer of an assistant against a rubric. Reply with a JSON object only: {"pass": true or false, "reason": "one sentence"}. Pass only when the answer meets every point of the rubric.`

func (j *Judge) grade(ctx context.Context, rubric, answer string) (verdict, error) {
	req := llm.Request{Role: llm.RoleDefault, JSON: true, Messages: []llm.Message{
		{Role: "system", Content: judgePrompt},
		{Role: "user", Content: fmt.Sprintf("Rubric:\n%s\n\nAnswer:\n%s", rubric, answer)},
	}}
	resp, err := llm.Ask(ctx, j.Model, req, llm.AskOptions{CutRetries: 1})
	if err != nil {
		return verdict{}, err
	}
	raw, err := replytext.Object(resp.Text, "pass", "reason")
	if err != nil {
		return verdict{}, fmt.Errorf("unreadable verdict %q: %w", excerpt(resp.Text), err)
	}
	var v verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return verdict{}, fmt.Errorf("unreadable verdict %s: %w", raw, err)
	}
	v.Reason = strings.TrimSpace(v.Reason)
	return v, nil
}

// checkJudge refuses a judge that is a model under test.
func checkJudge(j *Judge, t Target) error {
	if j == nil || j.Model == nil {
		return nil
	}
	for _, n := range t.ModelNames {
		if j.Name != "" && n == j.Name {
			return fmt.Errorf("%w (%s)", ErrJudgeUnderTest, n)
		}
	}
	if t.Config.Models != nil {
		if m, ok := t.Config.Models.(llm.Model); ok && sameModel(m, j.Model) {
			return fmt.Errorf("%w (the agent's models)", ErrJudgeUnderTest)
		}
		for _, r := range llm.Roles() {
			if m, ok := t.Config.Models.For(r); ok && sameModel(m, j.Model) {
				return fmt.Errorf("%w (role %s)", ErrJudgeUnderTest, r)
			}
		}
	}
	return nil
}

// sameModel compares two models without panicking on uncomparable ones.
func sameModel(a, b llm.Model) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
