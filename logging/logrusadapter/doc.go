// Package logrusadapter implements logging.Logger with logrus. It is the only
// package in capgraph that imports logrus, so the rest of the tree stays free
// to switch logging libraries.
package logrusadapter
