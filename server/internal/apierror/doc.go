// Package apierror holds the errors every protocol of the server answers
// with: the sentinel kinds the server maps to HTTP statuses in one place,
// and RequestError, a refused request naming the field at fault. Package
// server gives them to its users under the same names; the protocol
// packages under server/internal return them.
package apierror
