package state

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/internal/jsonquote"
)

// AppendJSON appends the state's JSON to b: exactly the bytes json.Marshal
// gives (the checkpoint's stored form is unchanged), without reflection for
// the parts every turn has. The engine encodes the state once per step with
// it (graph.JSONAppender); rare parts (error reports, approvals, grants,
// failures, artifacts, parameters) go through encoding/json.
// TestAppendJSONMatchesMarshal fills every field and compares.
func (s *State) AppendJSON(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.state(s)
	if e.err != nil {
		return nil, e.err
	}
	return e.b, nil
}

// AppendJSON appends the update's JSON to b (the engine encodes the update
// of each of several steps run together with it): json.Marshal's bytes, with
// a number that is not finite written as capabilities.FiniteCopy writes it.
func (u *Update) AppendJSON(b []byte) ([]byte, error) {
	j, err := capabilities.MarshalFinite(u)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// MarshalJSON encodes the step as its fields, parameters that are not
// finite as capabilities.FiniteCopy writes them (an event or an approval
// showing a plan never fails to encode).
func (s PlanStep) MarshalJSON() ([]byte, error) {
	type plain PlanStep
	return capabilities.MarshalFinite(plain(s))
}

// MarshalJSON encodes the approval as its fields, arguments that are not
// finite as capabilities.FiniteCopy writes them: an approval is an
// interrupt's payload, and asking a human never fails to encode.
func (a Approval) MarshalJSON() ([]byte, error) {
	type plain Approval
	return capabilities.MarshalFinite(plain(a))
}

// encoder appends JSON; the first error stops it.
type encoder struct {
	b   []byte
	err error
}

// key starts an object member, with a comma unless it is the first.
func (e *encoder) key(name string) {
	if c := e.b[len(e.b)-1]; c != '{' && c != '[' {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

// sep separates array elements.
func (e *encoder) sep() {
	if e.b[len(e.b)-1] != '[' {
		e.b = append(e.b, ',')
	}
}

func (e *encoder) str(s string)   { e.b = jsonquote.Append(e.b, s) }
func (e *encoder) num(n int64)    { e.b = strconv.AppendInt(e.b, n, 10) }
func (e *encoder) boolean(v bool) { e.b = strconv.AppendBool(e.b, v) }
func (e *encoder) null()          { e.b = append(e.b, "null"...) }
func (e *encoder) strField(k, v string) {
	e.key(k)
	e.str(v)
}

func (e *encoder) time(t time.Time) {
	if _, off := t.Zone(); off == 0 {
		if y := t.Year(); y >= 0 && y <= 9999 {
			e.b = appendUTC(e.b, t)
			return
		}
	}
	e.b = append(e.b, '"')
	b, err := t.AppendText(e.b) // RFC 3339 with nanoseconds, as MarshalJSON
	if err != nil {
		e.b = e.b[:len(e.b)-1]
		e.marshal(t) // encoding/json's error
		return
	}
	e.b = append(b, '"')
}

// appendUTC appends t, at offset zero and in years 0–9999, quoted as
// MarshalJSON writes it (RFC 3339, nanoseconds without trailing zeros, Z):
// the times of a state are UTC, and this is a third of AppendText's cost.
func appendUTC(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = append(b, '"')
	b = appendPadded(b, y, 4)
	b = append(b, '-')
	b = appendPadded(b, int(mo), 2)
	b = append(b, '-')
	b = appendPadded(b, d, 2)
	b = append(b, 'T')
	b = appendPadded(b, h, 2)
	b = append(b, ':')
	b = appendPadded(b, mi, 2)
	b = append(b, ':')
	b = appendPadded(b, s, 2)
	if ns := t.Nanosecond(); ns != 0 {
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		b = append(b, '.')
		b = appendPadded(b, ns, digits)
	}
	return append(b, 'Z', '"')
}

// appendPadded appends n (≥ 0) in at least width digits.
func appendPadded(b []byte, n, width int) []byte {
	var buf [9]byte
	i := len(buf)
	for n > 0 || i > len(buf)-width {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, buf[i:]...)
}

// marshal appends v as encoding/json does: the parts without a hand-written
// encoding, and every error but one: a number that is not finite (±Inf,
// NaN), which is written as capabilities.FiniteCopy writes it, so that no
// such number fails a turn (FuzzAppendJSONNonFinite).
func (e *encoder) marshal(v any) {
	if e.err != nil {
		return
	}
	j, err := capabilities.MarshalFinite(v)
	if err != nil {
		e.err = err
		return
	}
	e.b = append(e.b, j...)
}

func (e *encoder) strs(ss []string) {
	if ss == nil {
		e.null()
		return
	}
	e.b = append(e.b, '[')
	for _, s := range ss {
		e.sep()
		e.str(s)
	}
	e.b = append(e.b, ']')
}

func (e *encoder) state(s *State) {
	e.b = append(e.b, '{')
	e.key("messages")
	if s.Messages == nil {
		e.null()
	} else {
		e.b = append(e.b, '[')
		for i := range s.Messages {
			e.sep()
			e.message(&s.Messages[i])
		}
		e.b = append(e.b, ']')
	}
	if len(s.Context) > 0 {
		e.key("context")
		e.context(s.Context)
	}
	e.key("turn")
	e.turn(&s.Turn)
	if len(s.Metadata) > 0 {
		e.key("metadata")
		e.b = append(e.b, '{')
		var buf [16]string // a served thread's state carries about a dozen keys
		for _, k := range sortedKeys(buf[:], s.Metadata) {
			e.key2(k)
			e.str(s.Metadata[k])
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

// key2 starts a member whose name is data (a map key), escaped.
func (e *encoder) key2(k string) {
	if e.b[len(e.b)-1] != '{' {
		e.b = append(e.b, ',')
	}
	e.str(k)
	e.b = append(e.b, ':')
}

func (e *encoder) message(m *Message) {
	e.b = append(e.b, '{')
	e.strField("role", string(m.Role))
	e.strField("content", m.Content)
	if m.Kind != "" {
		e.strField("kind", string(m.Kind))
	}
	if m.Turn != 0 {
		e.key("turn")
		e.num(int64(m.Turn))
	}
	if !m.Time.IsZero() {
		e.key("time")
		e.time(m.Time)
	}
	if m.Report != nil {
		e.key("report")
		e.marshal(m.Report)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) context(cs capabilities.ContextStore) {
	e.b = append(e.b, '{')
	var types, keys [8]string
	for _, t := range sortedKeys(types[:], cs) {
		e.key2(t)
		m := cs[t]
		if m == nil {
			e.null()
			continue
		}
		e.b = append(e.b, '{')
		for _, k := range sortedKeys(keys[:], m) {
			e.key2(k)
			e.entry(m[k])
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) entry(c capabilities.ContextEntry) {
	e.b = append(e.b, '{')
	e.strField("type", c.Type)
	e.strField("key", c.Key)
	e.key("value")
	e.raw(c.Value)
	if c.Summary != "" {
		e.strField("summary", c.Summary)
	}
	if c.TaskObjective != "" {
		e.strField("task_objective", c.TaskObjective)
	}
	if c.Capability != "" {
		e.strField("capability", c.Capability)
	}
	if c.Turn != 0 {
		e.key("turn")
		e.num(int64(c.Turn))
	}
	e.key("created")
	e.time(c.Created)
	e.b = append(e.b, '}')
}

// raw appends a json.RawMessage: as is when it is valid and already
// compact with nothing encoding/json escapes, else through encoding/json
// (which compacts and escapes it, or names what is invalid).
func (e *encoder) raw(r json.RawMessage) {
	if r == nil {
		e.null()
		return
	}
	if !compactUnescaped(r) || !json.Valid(r) {
		e.marshal(r)
		return
	}
	e.b = append(e.b, r...)
}

// compactUnescaped reports whether r has no white space outside its
// strings and no byte encoding/json escapes: json.Marshal's own output,
// whose strings keep their spaces (a value a capability stored).
func compactUnescaped(r []byte) bool {
	inString, escaped := false, false
	for _, c := range r {
		switch {
		case c == '<' || c == '>' || c == '&' || c == 0xE2: // 0xE2 starts U+2028 and U+2029
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}

func (e *encoder) turn(t *Turn) {
	e.b = append(e.b, '{')
	e.key("number")
	e.num(int64(t.Number))
	if t.ID != "" {
		e.strField("id", t.ID)
	}
	if !t.StartedAt.IsZero() {
		e.key("started_at")
		e.time(t.StartedAt)
	}
	e.strField("input", t.Input)
	if t.Options != (Options{}) {
		e.key("options")
		e.options(t.Options)
	}
	if t.Trace != nil {
		e.key("trace")
		e.b = append(e.b, '{')
		if t.Trace.TraceParent != "" {
			e.strField("traceparent", t.Trace.TraceParent)
		}
		if t.Trace.TraceState != "" {
			e.strField("tracestate", t.Trace.TraceState)
		}
		e.b = append(e.b, '}')
	}
	if t.Task != nil {
		e.key("task")
		e.task(t.Task)
	}
	if len(t.ActiveCapabilities) > 0 {
		e.key("active_capabilities")
		e.strs(t.ActiveCapabilities)
	}
	if t.Plan != nil {
		e.key("plan")
		e.plan(t.Plan)
	}
	e.key("control")
	e.control(&t.Control)
	if len(t.Results) > 0 {
		e.key("results")
		e.b = append(e.b, '[')
		for i := range t.Results {
			e.sep()
			e.result(&t.Results[i])
		}
		e.b = append(e.b, ']')
	}
	if t.PendingApproval != nil {
		e.key("pending_approval")
		e.marshal(t.PendingApproval)
	}
	if len(t.Approvals) > 0 {
		e.key("approvals")
		e.marshal(t.Approvals)
	}
	if t.Done {
		e.key("done")
		e.boolean(true)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) options(o Options) {
	e.b = append(e.b, '{')
	if o.PlanApproval {
		e.key(SettingPlanApproval)
		e.boolean(true)
	}
	if o.ApprovalMode != "" {
		e.strField(SettingApprovalMode, o.ApprovalMode)
	}
	if o.SkipTaskExtraction {
		e.key(SettingSkipTaskExtraction)
		e.boolean(true)
	}
	if o.SkipClassification {
		e.key(SettingSkipClassification)
		e.boolean(true)
	}
	if o.WritesEnabled {
		e.key(SettingWritesEnabled)
		e.boolean(true)
	}
	if o.Target != "" {
		e.strField(SettingTarget, o.Target)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) task(t *Task) {
	e.b = append(e.b, '{')
	e.strField("text", t.Text)
	if t.DependsOnHistory {
		e.key("depends_on_history")
		e.boolean(true)
	}
	if t.Intent.Kind != "" || t.Intent.Changes != nil || t.Intent.Note != "" { // omitzero
		e.key("intent")
		if len(t.Intent.Changes) > 0 || t.Intent.Note != "" {
			e.marshal(&t.Intent) // floats: encoding/json's formatting
		} else {
			e.b = append(e.b, '{')
			if t.Intent.Kind != "" {
				e.strField("kind", string(t.Intent.Kind))
			}
			e.b = append(e.b, '}')
		}
	}
	e.b = append(e.b, '}')
}

func (e *encoder) plan(p *Plan) {
	e.b = append(e.b, '{')
	e.key("steps")
	if p.Steps == nil {
		e.null()
	} else {
		e.b = append(e.b, '[')
		for i := range p.Steps {
			e.sep()
			e.step(&p.Steps[i])
		}
		e.b = append(e.b, ']')
	}
	e.key("number")
	e.num(int64(p.Number))
	if !p.Created.IsZero() {
		e.key("created")
		e.time(p.Created)
	}
	if p.Approved {
		e.key("approved")
		e.boolean(true)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) step(s *PlanStep) {
	e.b = append(e.b, '{')
	e.strField("context_key", s.ContextKey)
	e.strField("capability", s.Capability)
	e.strField("task_objective", s.TaskObjective)
	if s.SuccessCriteria != "" {
		e.strField("success_criteria", s.SuccessCriteria)
	}
	if s.ExpectedOutput != "" {
		e.strField("expected_output", s.ExpectedOutput)
	}
	if len(s.Parameters) > 0 {
		e.key("parameters")
		e.marshal(s.Parameters)
	}
	if len(s.Inputs) > 0 {
		e.key("inputs")
		e.b = append(e.b, '[')
		for _, in := range s.Inputs {
			e.sep()
			e.b = append(e.b, '{')
			e.strField("type", in.Type)
			e.strField("key", in.Key)
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if len(s.DependsOn) > 0 {
		e.key("depends_on")
		e.b = append(e.b, '[')
		for _, d := range s.DependsOn {
			e.sep()
			e.num(int64(d))
		}
		e.b = append(e.b, ']')
	}
	e.strField("status", string(s.Status))
	if s.Attempts != 0 {
		e.key("attempts")
		e.num(int64(s.Attempts))
	}
	if !s.FirstAttemptAt.IsZero() {
		e.key("first_attempt_at")
		e.time(s.FirstAttemptAt)
	}
	if !s.NotBefore.IsZero() {
		e.key("not_before")
		e.time(s.NotBefore)
	}
	if s.Fallback != "" {
		e.strField("fallback", s.Fallback)
	}
	if len(s.FallbacksTried) > 0 {
		e.key("fallbacks_tried")
		e.strs(s.FallbacksTried)
	}
	if s.Recovered {
		e.key("recovered")
		e.boolean(true)
	}
	if s.Approved {
		e.key("approved")
		e.boolean(true)
	}
	if s.Grant != nil {
		e.key("grant")
		e.marshal(s.Grant)
	}
	if s.Error != nil {
		e.key("error")
		e.marshal(s.Error)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) control(c *Control) {
	e.b = append(e.b, '{')
	if c.Error != nil {
		e.key("error")
		e.marshal(c.Error)
	}
	if len(c.Retries) > 0 {
		e.key("retries")
		e.marshal(c.Retries)
	}
	e.key("plans_created")
	e.num(int64(c.PlansCreated))
	e.key("reclassifications")
	e.num(int64(c.Reclassifications))
	if c.ReclassificationReason != "" {
		e.strField("reclassification_reason", c.ReclassificationReason)
	}
	e.key("node_steps")
	e.num(int64(c.NodeSteps))
	e.key("tokens")
	e.num(int64(c.Tokens))
	if len(c.TokensByRole) > 0 {
		e.key("tokens_by_role")
		e.b = append(e.b, '{')
		var buf [8]string
		for _, k := range sortedKeys(buf[:], c.TokensByRole) {
			e.key2(k)
			e.num(int64(c.TokensByRole[k]))
		}
		e.b = append(e.b, '}')
	}
	if c.LimitExceeded != "" {
		e.strField("limit_exceeded", c.LimitExceeded)
	}
	if c.Blocked != nil {
		e.key("blocked")
		e.marshal(c.Blocked)
	}
	if c.Paused != 0 {
		e.key("paused")
		e.num(int64(c.Paused))
	}
	e.b = append(e.b, '}')
}

func (e *encoder) result(r *StepResult) {
	e.b = append(e.b, '{')
	e.key("step_index")
	e.num(int64(r.StepIndex))
	e.strField("capability", r.Capability)
	if r.TaskObjective != "" {
		e.strField("task_objective", r.TaskObjective)
	}
	e.key("success")
	e.boolean(r.Success)
	e.key("attempt")
	e.num(int64(r.Attempt))
	e.key("duration")
	e.num(int64(r.Duration))
	if r.Error != "" {
		e.strField("error", r.Error)
	}
	if r.Severity != "" {
		e.strField("severity", r.Severity)
	}
	e.key("at")
	e.time(r.At)
	e.key("plan")
	e.num(int64(r.Plan))
	if len(r.Artifacts) > 0 {
		e.key("artifacts")
		e.marshal(r.Artifacts)
	}
	e.b = append(e.b, '}')
}

// sortedKeys returns a map's keys in encoding/json's order (byte-wise), in
// buf when they fit (a state's maps are small: no allocation).
func sortedKeys[V any](buf []string, m map[string]V) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
