// Package responses is the OpenAI Responses API (POST /v1/responses,
// GET /v1/responses/{id}): its request decoded and validated by hand
// (Decode), every field used, accepted as a hint or refused with a 400
// naming it, and the metadata rules (OpenAI's limits) the native API's
// thread metadata shares; the response object it answers (Object) and the
// process's store of them for GET (Store); and its routes (Routes, built
// from Deps), which reach the server only through turns.Turns and
// chatturn.Chats.
package responses
