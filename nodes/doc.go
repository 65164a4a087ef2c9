// Package nodes holds the infrastructure nodes that turn a chat message into
// a plan and an answer: task extraction, classifier, orchestrator, respond and
// clarify. Each uses its LLM role when one is configured and a deterministic
// offline strategy otherwise (or when the LLM is unreachable and fallback to
// offline is set):
//
//   - task: the last user message, joined with the previous one for a short
//     follow-up ("and the RF voltage?"); its intent (read, change or
//     hypothetical, and for a change each target and value) from the rules
//     in intent.go, which also overrule a model's "change" when the message
//     says explicitly that nothing is to change;
//   - classifier: BM25 relevance of the task to each capability's name,
//     description, classifier instructions and positive examples, above a
//     threshold and a fraction of the best score; unknown task words are
//     read as abbreviations or typos of indexed words, words a capability
//     excludes in a negated clause veto it, everyday words never select
//     alone, and a follow-up referring back is classified by its own words;
//   - orchestrator: a dependency planner over provides/requires (topological
//     order, shared providers once, independent steps parallel, ends in respond);
//   - respond and clarify: templates that say they come from offline mode.
//
// Every model call goes through llm.Ask: reasoning is stripped from replies
// and streamed tokens, a reply cut by the token limit is asked again with a
// larger one, and JSON replies are found by the keys of their shape (shapes.go,
// which also gives each reply's JSON schema for structured output).
//
// Build them with New(cfg) (all five) or NewTaskExtraction, NewClassifier,
// NewOrchestrator, NewRespond and NewClarify. Every node implements Node,
// capabilities.ErrorClassifier and capabilities.RetryPolicyProvider. Errors
// are *capabilities.Error values with a stated classification:
//
//   - an unusable model reply: RETRIABLE, kind "format", wrapping *FormatError;
//     metadata parse_error, expected_shape and previous_reply are shown to the
//     model on the next attempt (task extraction, classifier and orchestrator
//     read them from Turn.Control.Error; a per-capability question is asked
//     again at once first, metadata capability names it);
//   - a JSON reply still cut off by the token limit after larger tries:
//     CRITICAL *llm.Error of kind llm.ErrTruncated naming max_tokens;
//   - a plan naming an unregistered capability: RECLASSIFICATION (*PlanError, ErrUnknownCapability);
//   - a plan input that does not exist, comes from a later step, or names a
//     step whose capability does not provide that type: REPLANNING listing
//     the available keys (*PlanError, ErrInvalidInputKey);
//   - a plan step of a side-effecting capability when the user did not ask
//     for a change, or one changing another target or value than the user
//     stated: REPLANNING with the reason (*PlanError, ErrUnrequestedChange);
//   - LLM failures: classified from *llm.Error (429/5xx/timeouts RETRIABLE with
//     the server's Retry-After; 401/403/quota CRITICAL naming the role;
//     context length exceeded CRITICAL, kind resource_exhausted, wrapping
//     capabilities.ErrResourceExhausted).
//
// A capability with side effects is active only when the task's intent is a
// change (the classifier withholds it, the offline planner never plans it),
// and every plan (a model's, the offline planner's, a human's edit through
// ValidatePlan) is checked against the intent.
//
// State the nodes write: task extraction sets Turn.Task (with its Intent); the classifier sets
// Turn.ActiveCapabilities, clears Turn.Plan and, when it runs because of a
// RECLASSIFICATION error, increments Control.Reclassifications and sets
// Control.ReclassificationReason; the orchestrator sets Turn.Plan (Number =
// Control.PlansCreated after incrementing it, DependsOn marked); respond and
// clarify append the turn's single assistant message, mark their plan step
// done and set Turn.Done. Task extraction, classifier and orchestrator clear
// Control.Error when they succeed (the failure they recover from is
// handled); respond and clarify clear it only when it is their own. Token use
// is returned in Update.Tokens by role, also with an error (a reply that
// could not be used was paid for).
//
// Payloads emitted with graph.Emit (EventCustom):
//
//   - Status{Node, Text}: a short status line;
//   - Token{Node, Text}: a chunk of the answer or questions;
//   - AnswerReset{Node, Reason}: the chunks Node streamed so far are void
//     (its model's stream failed part way, was cut by the token limit and is
//     asked again, or held reasoning seen only at its end); frontends discard
//     them;
//   - TaskExtracted{Task, DependsOnHistory, Offline, Intent};
//   - CapabilitiesSelected{Capabilities, Added, Offline, Withheld};
//   - NotSelected{Capability, Err}: a classification call failed, or the model
//     named an unregistered capability;
//   - PlanMade{Plan, Offline};
//   - OfflineFallback{Node, Reason}: the model was unreachable, the node
//     answered offline.
package nodes
