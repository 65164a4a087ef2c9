// Package jsonreply writes the server's JSON answers, one way for every
// route (the errors' shape is package apierror's).
package jsonreply
