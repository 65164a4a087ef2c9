package nodes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// planShape is the reply the orchestrator expects, shown again after an
// unusable reply.
const planShape = `{"steps": [{"context_key": "...", "capability": "...", "task_objective": "...", "success_criteria": "...", "expected_output": "...", "parameters": {}, "inputs": [{"CONTEXT_TYPE": "context_key"}]}]} ending with one respond or clarify step`

// planStepFields are the keys of a plan step; planReply is planShape's keys
// and JSON schema.
var (
	planStepFields = []shapeField{
		optional("context_key", jsonString()), // respond and clarify may leave it out
		required("capability", jsonString()),
		optional("task_objective", jsonString()),
		optional("success_criteria", jsonString()),
		optional("expected_output", jsonString()),
		optional("parameters", jsonFreeObject()),
		optional("inputs", jsonArray(jsonMap(jsonString()))),
	}
	stepKeys  = newShape("", planStepFields...).keys()
	planReply = newShape("plan", required("steps", jsonArray(jsonObject(planStepFields...))))
)

// parsePlan parses a plan reply strictly: code fences and surrounding prose
// are tolerated; unknown keys (compared case-sensitively), wrong types,
// missing context keys or capabilities and duplicate context keys are errors
// describing exactly what is wrong.
func parsePlan(reply string) ([]capabilities.PlannedStep, error) {
	raw, err := extractJSON(reply, planReply.keys()...)
	if err != nil {
		return nil, err
	}
	if steps, ok := parsePlanValid(raw); ok {
		return steps, nil
	}
	return parsePlanStrict(raw)
}

// parsePlanStrict parses the plan object of a reply, saying exactly what is
// wrong with it.
func parsePlanStrict(raw json.RawMessage) ([]capabilities.PlannedStep, error) {
	top, err := strictObject(raw, "the plan", planReply.keys()...)
	if err != nil {
		return nil, err
	}
	var rawSteps []json.RawMessage
	ok, err := field(top, "steps", "the plan", &rawSteps)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf(`the plan has no "steps" list`)
	}
	steps := make([]capabilities.PlannedStep, 0, len(rawSteps))
	seen := map[string]int{}
	for i, rs := range rawSteps {
		where := fmt.Sprintf("step %d", i+1)
		m, err := strictObject(rs, where, stepKeys...)
		if err != nil {
			return nil, err
		}
		var st capabilities.PlannedStep
		var rawInputs []map[string]json.RawMessage
		for _, f := range []struct {
			key string
			v   any
		}{{"context_key", &st.ContextKey}, {"capability", &st.Capability}, {"task_objective", &st.TaskObjective},
			{"success_criteria", &st.SuccessCriteria}, {"expected_output", &st.ExpectedOutput},
			{"parameters", &st.Parameters}, {"inputs", &rawInputs}} {
			if _, err := field(m, f.key, where, f.v); err != nil {
				return nil, err
			}
		}
		normalizeStep(&st)
		if st.Capability == "" {
			return nil, fmt.Errorf(`%s has no "capability"`, where)
		}
		if st.ContextKey == "" {
			return nil, fmt.Errorf(`%s has no "context_key"`, where)
		}
		if j, dup := seen[st.ContextKey]; dup {
			return nil, fmt.Errorf("%s repeats the context_key %q of step %d (context keys must be unique)", where, st.ContextKey, j+1)
		}
		seen[st.ContextKey] = i
		for n, in := range rawInputs {
			if len(in) == 0 {
				return nil, fmt.Errorf("%s: input %d is empty (want {\"CONTEXT_TYPE\": \"context_key\"})", where, n+1)
			}
			types := make([]string, 0, len(in))
			for t := range in {
				types = append(types, t)
			}
			slices.Sort(types)
			for _, t := range types {
				var key string
				if err := json.Unmarshal(in[t], &key); err != nil {
					return nil, fmt.Errorf("%s: input %d: the key for %s must be a string", where, n+1, t)
				}
				st.Inputs = append(st.Inputs, capabilities.InputRef{Type: t, Key: key})
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// normalizeStep trims the capability, writes respond and clarify in lower
// case, and names a terminal step without a context key after itself.
func normalizeStep(st *capabilities.PlannedStep) {
	st.Capability = strings.TrimSpace(st.Capability)
	if isTerminal(strings.ToLower(st.Capability)) {
		st.Capability = strings.ToLower(st.Capability)
	}
	if st.ContextKey == "" && isTerminal(st.Capability) {
		st.ContextKey = st.Capability
	}
}

// fastStepKeys are the keys of a step parsePlanValid reads, in the order it
// decodes them.
var fastStepKeys = [...]string{"context_key", "capability", "task_objective", "success_criteria", "expected_output", "parameters", "inputs"}

// parsePlanValid is parsePlan for a plan it would accept, in one pass over
// raw (valid JSON) without building error messages: a step's keys are read
// as encoding/json into a map would (the last of a repeated key wins, null
// is absent). Anything parsePlan might reject makes it report false, and
// parsePlan then says what is wrong (FuzzParsePlanValid checks they agree).
func parsePlanValid(raw []byte) ([]capabilities.PlannedStep, bool) {
	var rawSteps []byte
	if !members(raw, func(k string, v []byte) bool {
		rawSteps = v
		return k == "steps"
	}) || rawSteps == nil {
		return nil, false
	}
	var steps []capabilities.PlannedStep
	ok := elements(rawSteps, func(rs []byte) bool {
		var vals [len(fastStepKeys)][]byte // the last value of each key
		if !members(rs, func(k string, v []byte) bool {
			i := slices.Index(fastStepKeys[:], k)
			if i >= 0 {
				vals[i] = v
			}
			return i >= 0 // another key, even one of stepKeys: parsePlanStrict
		}) {
			return false
		}
		var st capabilities.PlannedStep
		for i, dst := range []*string{&st.ContextKey, &st.Capability, &st.TaskObjective, &st.SuccessCriteria, &st.ExpectedOutput} {
			if v := vals[i]; v != nil && !isNull(v) {
				s, ok := jsonText(v)
				if !ok {
					return false
				}
				*dst = s
			}
		}
		if v := vals[5]; v != nil && !isNull(v) {
			if v[0] != '{' || json.Unmarshal(v, &st.Parameters) != nil {
				return false
			}
		}
		if v := vals[6]; v != nil && !isNull(v) && !elements(v, func(in []byte) bool {
			first := len(st.Inputs)
			if !members(in, func(t string, key []byte) bool {
				k, ok := jsonText(key)
				if !ok || !utf8.ValidString(t) {
					return false
				}
				for j := first; j < len(st.Inputs); j++ { // a repeated type: the last wins
					if st.Inputs[j].Type == t {
						st.Inputs[j].Key = k
						return true
					}
				}
				st.Inputs = append(st.Inputs, capabilities.InputRef{Type: t, Key: k})
				return true
			}) || len(st.Inputs) == first {
				return false
			}
			slices.SortFunc(st.Inputs[first:], func(a, b capabilities.InputRef) int { return strings.Compare(a.Type, b.Type) })
			return true
		}) {
			return false
		}
		normalizeStep(&st)
		if st.Capability == "" || st.ContextKey == "" || slices.ContainsFunc(steps, func(p capabilities.PlannedStep) bool { return p.ContextKey == st.ContextKey }) {
			return false
		}
		steps = append(steps, st)
		return true
	})
	if !ok {
		return nil, false
	}
	if steps == nil {
		steps = []capabilities.PlannedStep{}
	}
	return steps, true
}

// planProblem is a plan that parsed but is rejected before running.
type planProblem struct {
	format string     // a structural problem: re-prompt (format error)
	plan   *PlanError // unknown capability or invalid input key
}

// validatePlan applies the plan rules: unknown capability →
// reclassification; an input key that does not exist or is produced by the
// same or a later step → replanning with the available keys; a respond or
// clarify step before the end → rejected; parameters holding a number that
// is not finite (checkFinite) → replanning; a side-effecting step the user's
// intent does not ask for (see checkIntent) → replanning; no terminal step →
// respond appended; empty plan → a single respond step. It returns the steps
// to run.
func validatePlan(steps []capabilities.PlannedStep, reg *capabilities.Registry, store capabilities.ContextStore, task string, in intent.Intent) ([]capabilities.PlannedStep, *planProblem) {
	if len(steps) == 0 {
		return []capabilities.PlannedStep{respondStep(task)}, nil
	}
	var unknown []string
	for _, st := range steps {
		if isTerminal(st.Capability) {
			continue
		}
		if _, ok := reg.Get(st.Capability); !ok && !slices.Contains(unknown, st.Capability) {
			unknown = append(unknown, st.Capability)
		}
	}
	if len(unknown) > 0 {
		i := slices.IndexFunc(steps, func(s capabilities.PlannedStep) bool { return s.Capability == unknown[0] })
		return nil, &planProblem{plan: &PlanError{Kind: ErrUnknownCapability, Step: i, Unknown: unknown,
			Problem: fmt.Sprintf("capability %s is not registered (registered: %s)", quoteAll(unknown), strings.Join(reg.Names(), ", "))}}
	}
	for i, st := range steps[:len(steps)-1] {
		if isTerminal(st.Capability) {
			return nil, &planProblem{format: fmt.Sprintf("step %d is %q, but respond and clarify may only be the last step", i+1, st.Capability)}
		}
	}
	producedAt := map[string]int{}
	for i, st := range steps {
		producedAt[st.ContextKey] = i
	}
	for i, st := range steps {
		for _, in := range st.Inputs {
			if j, ok := producedAt[in.Key]; ok && !isTerminal(steps[j].Capability) {
				if j >= i {
					return nil, &planProblem{plan: &PlanError{Kind: ErrInvalidInputKey, Step: i, Available: availableKeys(steps[:i], store),
						Problem: fmt.Sprintf("input {%q: %q} is produced by step %d, which runs at or after this step; available keys: %s",
							in.Type, in.Key, j+1, orNone(strings.Join(availableKeys(steps[:i], store), ", ")))}}
				}
				// The producer must provide the type named, or the input cannot be resolved.
				if c, ok := reg.Get(steps[j].Capability); ok && !slices.Contains(c.Provides(), in.Type) {
					return nil, &planProblem{plan: &PlanError{Kind: ErrInvalidInputKey, Step: i, Available: availableKeys(steps[:i], store),
						Problem: fmt.Sprintf("input {%q: %q} names step %d (%s), which provides %s, not %s",
							in.Type, in.Key, j+1, c.Name(), orNone(strings.Join(c.Provides(), ", ")), in.Type)}}
				}
				continue
			}
			if _, ok := store.Get(in.Type, in.Key); ok {
				continue
			}
			avail := availableKeys(steps[:i], store)
			return nil, &planProblem{plan: &PlanError{Kind: ErrInvalidInputKey, Step: i, Available: avail,
				Problem: fmt.Sprintf("input {%q: %q} does not exist; available keys: %s", in.Type, in.Key, orNone(strings.Join(avail, ", ")))}}
		}
	}
	if pe := checkFinite(steps); pe != nil {
		return nil, &planProblem{plan: pe}
	}
	if pe := checkIntent(steps, reg, store, in); pe != nil {
		return nil, &planProblem{plan: pe}
	}
	if !isTerminal(steps[len(steps)-1].Capability) {
		steps = append(slices.Clip(steps), respondStep(task))
	}
	return steps, nil
}

// checkIntent rejects a step of a side-effecting capability unless the user
// asked for a change, and one whose target or value differs from the change
// the user stated (intent.Intent.PermitsPlanned on the step's planned
// action, see plannedAction). The rejection is REPLANNING: the reason is
// shown to the planner (Problem, an instruction to the model), and a plan
// that keeps proposing the change uses up the planning budget and ends in
// an error report; the operator reads Operator, in plain words. The agent
// audits every rejection (event and outcome unrequested).
func checkIntent(steps []capabilities.PlannedStep, reg *capabilities.Registry, store capabilities.ContextStore, in intent.Intent) *PlanError {
	for i, st := range steps {
		c, ok := reg.Get(st.Capability)
		if !ok || !capabilities.HasSideEffects(c) {
			continue
		}
		action := plannedAction(st, steps[:i], store)
		err := in.PermitsPlanned(action)
		if err == nil {
			continue
		}
		pe := &PlanError{Kind: ErrUnrequestedChange, Step: i, Cause: err, Action: action}
		if in.IsChange() {
			pe.Problem = fmt.Sprintf("step %d (%s) is not the change the user asked for: %v. Change exactly the target the user named, to the value the user stated",
				i+1, st.Capability, err)
			pe.Operator = fmt.Sprintf("The plan's step %d (%s) was not the change you asked for (%s), so it was refused and nothing was changed.",
				i+1, st.Capability, strings.TrimPrefix(in.Summary(), "change: "))
		} else {
			pe.Problem = fmt.Sprintf("step %d (%s) would change the outside world, but the user did not ask for a change "+
				"(the request reads as %s). Plan only steps that read or look up; never change anything for this request",
				i+1, st.Capability, in.Summary())
			pe.Operator = fmt.Sprintf("You did not ask for a change (your request %s), so nothing will be changed: "+
				"the plan's step %d (%s), which would have changed the machine, was refused.", askedAs(in), i+1, st.Capability)
		}
		return pe
	}
	return nil
}

// askedAs says in plain words how a request that changes nothing reads.
func askedAs(in intent.Intent) string {
	if in.Kind == intent.KindHypothetical {
		return "asks what would happen"
	}
	return "asks to read or look something up"
}

// plannedAction is what a planned side-effecting step will do, as far as the
// plan says: parameters.values (target → value) gives one change per
// target; otherwise one change whose value is parameters.value or the value
// its objective states ("to 105 A"; none: not known yet) and whose target is
// the text naming it: the step's objective and parameters and, for each
// input, the objective and parameters of the earlier step or the context
// entry it reads (a channel_finding query, the channels found earlier).
func plannedAction(st capabilities.PlannedStep, earlier []capabilities.PlannedStep, store capabilities.ContextStore) capabilities.Action {
	a := capabilities.Action{Capability: st.Capability}
	if vs, ok := st.Parameters["values"].(map[string]any); ok && len(vs) > 0 {
		keys := make([]string, 0, len(vs))
		for k := range vs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			a.Changes = append(a.Changes, capabilities.Change{Target: k, Value: vs[k], Unit: paramUnit(st)})
		}
		return a
	}
	texts := []string{st.TaskObjective, paramText(st.Parameters)}
	for _, in := range st.Inputs {
		if j := slices.IndexFunc(earlier, func(e capabilities.PlannedStep) bool { return e.ContextKey == in.Key }); j >= 0 {
			texts = append(texts, earlier[j].TaskObjective, paramText(earlier[j].Parameters))
		} else if e, ok := store.Get(in.Type, in.Key); ok {
			texts = append(texts, e.TaskObjective, e.Summary, string(e.Value))
		}
	}
	ch := capabilities.Change{Target: strings.Join(slices.DeleteFunc(texts, func(s string) bool { return s == "" }), " | "), Unit: paramUnit(st)}
	switch v := st.Parameters["value"].(type) {
	case nil:
		if f, u, ok := intent.StatedValue(st.TaskObjective); ok {
			ch.Value, ch.Unit = f, u
		}
	case string:
		if f, u, ok := intent.ParseQuantity(v); ok {
			ch.Value = f
			if u != "" {
				ch.Unit = u
			}
		} else {
			ch.Value = v
		}
	default:
		ch.Value = v
	}
	a.Changes = []capabilities.Change{ch}
	return a
}

func paramUnit(st capabilities.PlannedStep) string {
	if u, ok := st.Parameters["unit"].(string); ok {
		return intent.CanonicalUnit(u)
	}
	if u, ok := st.Parameters["units"].(string); ok {
		return intent.CanonicalUnit(u)
	}
	return ""
}

// paramText is a step's parameters as text, without the values it sets.
func paramText(p map[string]any) string {
	if len(p) == 0 {
		return ""
	}
	rest := make(map[string]any, len(p))
	for k, v := range p {
		if k != "value" && k != "values" {
			rest[k] = v
		}
	}
	b, _ := json.Marshal(rest)
	return string(b)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// availableKeys lists {TYPE: key} usable by a step: earlier steps' outputs
// and the context store.
func availableKeys(earlier []capabilities.PlannedStep, store capabilities.ContextStore) []string {
	var out []string
	for _, e := range store.Entries() {
		out = append(out, fmt.Sprintf("{%q: %q} (available context)", e.Type, e.Key))
	}
	for i, st := range earlier {
		t := st.ExpectedOutput
		if t == "" {
			t = "?"
		}
		out = append(out, fmt.Sprintf("{%q: %q} (step %d)", t, st.ContextKey, i+1))
	}
	return out
}

func respondStep(task string) capabilities.PlannedStep {
	return capabilities.PlannedStep{ContextKey: "user_response", Capability: state.NodeRespond,
		TaskObjective: "Answer the user: " + task, ExpectedOutput: ""}
}

// toPlanSteps marks dependencies: a step depends on the earlier steps whose
// outputs it reads. Steps with no dependency between them may run together;
// the terminal step depends on every other step, since it reports on them.
func toPlanSteps(steps []capabilities.PlannedStep) []state.PlanStep {
	out := make([]state.PlanStep, len(steps))
	producedAt := map[string]int{}
	for i, st := range steps {
		ps := state.PlanStep{PlannedStep: st, Status: state.StepPending}
		if isTerminal(st.Capability) {
			for j := range i {
				ps.DependsOn = append(ps.DependsOn, j)
			}
		} else {
			for _, in := range st.Inputs {
				if j, ok := producedAt[in.Key]; ok && !slices.Contains(ps.DependsOn, j) {
					ps.DependsOn = append(ps.DependsOn, j)
				}
			}
			slices.Sort(ps.DependsOn)
		}
		out[i] = ps
		producedAt[st.ContextKey] = i
	}
	return out
}
