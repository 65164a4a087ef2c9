// Package pgschema is the part of the PostgreSQL test set-up that needs no
// Store: which database the tests use (CAPGRAPH_TEST_POSTGRES) and a fresh
// schema in it that is dropped when the test ends. It is its own package so
// that both package postgres's internal tests (which cannot import pgtest:
// pgtest imports postgres) and pgtest share it.
package pgschema
