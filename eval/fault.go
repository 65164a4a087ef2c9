package eval

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/capgraph/capgraph/capabilities"
)

// injector counts the executions of each faulted capability in one case
// run and says which fail.
type injector struct {
	mu     sync.Mutex
	faults map[string][]Fault
	calls  map[string]int
}

func newInjector(faults []Fault) *injector {
	in := &injector{faults: map[string][]Fault{}, calls: map[string]int{}}
	for _, f := range faults {
		in.faults[f.Capability] = append(in.faults[f.Capability], f)
	}
	return in
}

// next counts one execution of capability name and returns the fault it
// meets, if any.
func (in *injector) next(name string) (Fault, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls[name]++
	n := in.calls[name]
	for _, f := range in.faults[name] {
		first := max(f.Call, 1)
		times := f.Times
		if times == 0 {
			times = 1
		}
		if n >= first && (times < 0 || n < first+times) {
			return f, true
		}
	}
	return Fault{}, false
}

// injectedError is an injected severity: it states its classification.
type injectedError struct{ cl capabilities.Classification }

func (e *injectedError) Error() string                               { return e.cl.UserMessage }
func (e *injectedError) Classification() capabilities.Classification { return e.cl }

// KindInjected is the error kind of an injected severity.
const KindInjected = "injected"

// fail executes fault f in place of the capability. Timeouts, 429s,
// panics and hangs are the errors a real capability would return, so the
// capability's own classifier and the default one read them as they
// would in production; a severity states itself.
func fail(ctx context.Context, f Fault) error {
	msg := f.Message
	if msg == "" {
		msg = "injected " + f.Fault
	}
	switch f.Fault {
	case FaultTimeout:
		return fmt.Errorf("%s: %w", msg, context.DeadlineExceeded)
	case FaultRateLimit:
		return &capabilities.StatusError{Code: 429, Delay: f.RetryAfter.D(), Err: errors.New(msg)}
	case FaultUnavailable:
		return &capabilities.StatusError{Code: 503, Delay: f.RetryAfter.D(), Err: errors.New(msg)}
	case FaultPanic:
		panic(msg)
	case FaultHang:
		<-ctx.Done()
		return fmt.Errorf("%s: %w", msg, ctx.Err())
	}
	sev, _ := capabilities.ParseSeverity(f.Fault)
	return &injectedError{cl: capabilities.Classification{Severity: sev, Kind: KindInjected, UserMessage: msg,
		RetryAfter: capabilities.Duration(f.RetryAfter.D())}}
}

// faulty is a capability whose executions may fail by injection. It
// keeps every optional interface of the capability it wraps: those whose
// absence means something to the agent (a retry policy of its own, a
// readback, a reconciler) by the type chosen in wrapCapability, the others
// by answering as an absent one would.
type faulty struct {
	capabilities.Capability
	in *injector
}

func (c *faulty) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	if f, ok := c.in.next(c.Name()); ok {
		return capabilities.Output{}, fail(ctx, f)
	}
	return c.Capability.Execute(ctx, step)
}

// ClassifyError reads an injected severity as itself; anything else as
// the capability would.
func (c *faulty) ClassifyError(err error, ec capabilities.ErrorContext) capabilities.Classification {
	var ie *injectedError
	if errors.As(err, &ie) {
		return ie.cl
	}
	if ecl, ok := c.Capability.(capabilities.ErrorClassifier); ok {
		return ecl.ClassifyError(err, ec)
	}
	return capabilities.Classification{}
}

func (c *faulty) ClassifierGuide() *capabilities.ClassifierGuide {
	if g, ok := c.Capability.(capabilities.ClassifierGuideProvider); ok {
		return g.ClassifierGuide()
	}
	return nil
}

func (c *faulty) OrchestratorGuide() *capabilities.OrchestratorGuide {
	if g, ok := c.Capability.(capabilities.OrchestratorGuideProvider); ok {
		return g.OrchestratorGuide()
	}
	return nil
}

func (c *faulty) Fallbacks() []string {
	if f, ok := c.Capability.(capabilities.FallbackProvider); ok {
		return f.Fallbacks()
	}
	return nil
}

func (c *faulty) RequiresApproval(step capabilities.Step) (bool, string) {
	if a, ok := c.Capability.(capabilities.ApprovalRequirer); ok {
		return a.RequiresApproval(step)
	}
	return false, ""
}

func (c *faulty) SideEffects() bool { return capabilities.HasSideEffects(c.Capability) }

func (c *faulty) Idempotent() bool {
	i, ok := c.Capability.(capabilities.Idempotenter)
	return ok && i.Idempotent()
}

func (c *faulty) DescribeAction(step capabilities.Step) (capabilities.Action, error) {
	return capabilities.DescribeAction(c.Capability, step)
}

// RetryPolicy forwards the capability's own policy; the zero policy, when
// it states none, is no policy of its own (capabilities.HasOwnRetryPolicy).
func (c *faulty) RetryPolicy() capabilities.RetryPolicy {
	p, _ := capabilities.HasOwnRetryPolicy(c.Capability)
	return p
}

// ProvidedTypes forwards the Go types of what the capability provides
// (nil: none stated), which the registry compares with its consumers'.
func (c *faulty) ProvidedTypes() map[string]reflect.Type {
	if tp, ok := c.Capability.(capabilities.TypedProvider); ok {
		return tp.ProvidedTypes()
	}
	return nil
}

// The optional interfaces whose mere presence changes what the agent does.
type (
	readback  struct{ r capabilities.Readbacker }
	reconcile struct{ r capabilities.Reconciler }
)

func (r readback) Readback(ctx context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
	return r.r.Readback(ctx, a)
}
func (r reconcile) Reconcile(ctx context.Context, s capabilities.Step, a capabilities.Action) (capabilities.Outcome, error) {
	return r.r.Reconcile(ctx, s, a)
}

type (
	faultyB struct {
		*faulty
		readback
	}
	faultyC struct {
		*faulty
		reconcile
	}
	faultyBC struct {
		*faulty
		readback
		reconcile
	}
)

// wrapCapability returns c with injected faults, of the type that keeps
// its optional interfaces.
func wrapCapability(c capabilities.Capability, in *injector) capabilities.Capability {
	f := &faulty{Capability: c, in: in}
	rb, hasB := c.(capabilities.Readbacker)
	rc, hasC := c.(capabilities.Reconciler)
	b, r := readback{rb}, reconcile{rc}
	switch {
	case hasB && hasC:
		return faultyBC{f, b, r}
	case hasB:
		return faultyB{f, b}
	case hasC:
		return faultyC{f, r}
	}
	return f
}

// injectFaults returns a registry holding reg's capabilities, those with
// faults wrapped; reg itself is not changed. Every fault must name a
// registered capability.
func injectFaults(reg *capabilities.Registry, faults []Fault) (*capabilities.Registry, error) {
	if len(faults) == 0 {
		return reg, nil
	}
	in := newInjector(faults)
	for name := range in.faults {
		if _, ok := reg.Get(name); !ok {
			return nil, fmt.Errorf("inject: no capability %q is registered (registered: %v)", name, reg.Names())
		}
	}
	out := capabilities.NewRegistry()
	for name, desc := range reg.ContextTypes() {
		if err := out.DeclareContextType(name, desc); err != nil {
			return nil, err
		}
	}
	for _, c := range reg.All() {
		if _, ok := in.faults[c.Name()]; ok {
			c = wrapCapability(c, in)
		}
		if err := out.Register(c); err != nil {
			return nil, err
		}
	}
	return out, out.Validate()
}
