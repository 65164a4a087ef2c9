package capabilities

// Targets: a side-effecting capability acts on a named target system — for
// the demo, "live" (the machine) and "simulator" (a virtual one beside it).
// The configuration says, per target, whether writes are enabled, how they
// are approved and how many a turn may make; the framework enforces it where
// a step executes (docs/time-travel.md, docs/safety.md). A capability learns
// its turn's target from Step.Target (and Action.Target in Readback).

// The demo's targets; an application may name its own.
const (
	TargetLive      = "live"
	TargetSimulator = "simulator"
)

// Targeter is implemented by a capability that can act on several named
// targets: Targets lists them (none: as if it were no Targeter). A side-effecting capability that is not a
// Targeter acts only on the configured default target (the live machine,
// as far as the framework can tell), so a turn on any other target — a
// rehearsal on the simulator — is refused before it runs.
type Targeter interface {
	Targets() []string
}
