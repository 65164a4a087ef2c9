package cli

import (
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/state"
)

// Slash commands of chat, as in the reference (osprey.md §7.5): the message is
// split on whitespace, every /name[:value] token is a command, the remaining
// words are the message. Agent-control commands change the turn options of
// this and every later turn of the session.

// slashKind says what a parsed line asks for besides options.
type slashKind int

const (
	slashNone slashKind = iota
	slashStatus
	slashClear
	slashHelp
	slashExit
)

// slashResult is a parsed chat line.
type slashResult struct {
	// Message is what is left to send to the agent ("" for none).
	Message string
	// Options after the line's commands.
	Options state.Options
	// Actions are the UI commands in order.
	Actions []slashKind
	// Notes say what changed, one per command, for the user.
	Notes []string
}

// parseSlash applies the line's commands to opts. An unknown command or
// value is an error naming it (nothing is sent then).
func parseSlash(line string, opts state.Options) (slashResult, error) {
	r := slashResult{Options: opts}
	words := strings.Fields(line)
	var msg []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "/") || len(w) == 1 {
			msg = append(msg, w)
			continue
		}
		name, value, hasValue := strings.Cut(strings.ToLower(w[1:]), ":")
		// "/approval on" as well as "/approval:on".
		if !hasValue && i+1 < len(words) && takesValue(name, strings.ToLower(words[i+1])) {
			value, hasValue = strings.ToLower(words[i+1]), true
			i++
		}
		if err := r.apply(name, value, hasValue); err != nil {
			return slashResult{}, err
		}
	}
	r.Message = strings.Join(msg, " ")
	return r, nil
}

func takesValue(name, next string) bool {
	switch name {
	case "approval":
		return next == "on" || next == "off" || next == "selective"
	case "planning", "caps", "task":
		return next == "on" || next == "off"
	}
	return false
}

func onOff(name, value string, hasValue bool) (bool, error) {
	if !hasValue {
		return true, nil
	}
	switch value {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("/%s:%s: the value must be on or off", name, value)
}

func (r *slashResult) apply(name, value string, hasValue bool) error {
	switch name {
	case "planning":
		on, err := onOff(name, value, hasValue)
		if err != nil {
			return err
		}
		r.Options.PlanApproval = on
		r.Notes = append(r.Notes, "plan approval "+word(on))
	case "approval":
		switch {
		case !hasValue || value == "on":
			r.Options.ApprovalMode = "all_capabilities"
		case value == "off":
			r.Options.ApprovalMode = "disabled"
		case value == "selective":
			r.Options.ApprovalMode = "selective"
		default:
			return fmt.Errorf("/approval:%s: the value must be on, off or selective", value)
		}
		r.Notes = append(r.Notes, "approval mode "+r.Options.ApprovalMode)
	case "caps":
		on, err := onOff(name, value, hasValue)
		if err != nil {
			return err
		}
		r.Options.SkipClassification = !on
		r.Notes = append(r.Notes, "capability selection "+word(on)+map[bool]string{true: "", false: " (every capability is active)"}[on])
	case "task":
		on, err := onOff(name, value, hasValue)
		if err != nil {
			return err
		}
		r.Options.SkipTaskExtraction = !on
		r.Notes = append(r.Notes, "task extraction "+word(on)+map[bool]string{true: "", false: " (your message is the task)"}[on])
	case "status":
		r.Actions = append(r.Actions, slashStatus)
	case "clear":
		r.Actions = append(r.Actions, slashClear)
	case "help":
		r.Actions = append(r.Actions, slashHelp)
	case "exit", "quit":
		r.Actions = append(r.Actions, slashExit)
	default:
		return fmt.Errorf("unknown command /%s (try /help)", name)
	}
	return nil
}

func word(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

const chatHelp = `Type a question and press Enter. Commands (several may share a line with a question):
  /planning[:on|off]             approve the plan before any step runs
  /approval on|off|selective     approval of every capability, none, or those that ask for it
  /caps:off, /caps:on            skip capability selection (every capability active) or not
  /task:off, /task:on            skip task extraction (your message is the task) or not
  /status                        thread, options, the last turn's plan and outcome
  /clear                         start a new conversation (a new thread)
  /help                          this help
  /exit                          leave (the thread stays in the store)
When a step needs approval, answer yes or no.`
