// Package effectcrash holds the kill -9 test of side effects: a change
// runs at most once, whatever point of the attempt a crash cuts.
package effectcrash
