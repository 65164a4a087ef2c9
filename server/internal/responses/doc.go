// Package responses is the wire side of the OpenAI Responses API
// (POST /v1/responses): its request decoded and validated by hand (Decode),
// every field used, accepted as a hint or refused with a 400 naming it,
// and the metadata rules (OpenAI's limits) the native API's thread
// metadata shares; the response object it answers (Object) and the
// process's store of them for GET /v1/responses/{id} (Store). The handler
// that runs the turn is package server's.
package responses
