// Package reqbody reads request bodies for the server's routes: the whole
// body, its failures told as the client's (413 for an oversized body, 408
// for one that stopped arriving, 400 for one that ended early, never the
// network error), then exactly one JSON value, its errors 400s that name
// the field and what was expected in JSON's terms (unknown fields refused
// by DecodeStrict, for the native API's own shapes).
package reqbody
