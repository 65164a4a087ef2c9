// Package prompts holds the prompt templates of the agent's model roles, one
// text/template per role, embedded in the binary and parsed once. An
// application can override any of them from a directory (files named
// <role>.tmpl) or from Go (Config.Overrides). Each template renders the system
// prompt of its role from the data struct named after it (ClassifierData,
// OrchestratorData, ...); capability guides and examples are injected by the
// helpers in guides.go. The embedded templates a turn renders every turn are
// also written out as Go (builtin.go), which a Set uses while they are not
// overridden: text/template's field lookups were a tenth of a turn's CPU.
package prompts
