// Package typo measures how far a word is from another, for the places
// that forgive misspellings: configuration keys ("did you mean"), the
// offline classifier's vocabulary, a demo's channel search. Standard
// library only.
package typo
