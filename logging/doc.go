// Package logging is capgraph's small leveled logging interface. Every
// package logs through Logger so that none of them depends on a logging
// library; the default implementation is the logrus adapter in
// logging/logrusadapter, the only package that imports logrus.
//
// The shape follows Temporal's log.Logger: a message and alternating
// key/value pairs, plus With for loggers that carry fields.
package logging
