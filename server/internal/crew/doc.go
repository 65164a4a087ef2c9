// Package crew gives every goroutine of the server an owner: a Crew starts
// them and Stop cancels and joins them; a Tally counts what must end before
// a wait returns (runs, loops) without a goroutine of its own.
package crew
