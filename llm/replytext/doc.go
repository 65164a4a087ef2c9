// Package replytext reads the text of a language model's reply the same way
// for every role: reasoning is never shown and never parsed, and a JSON reply
// is found by the shape the caller expects.
//
// Reasoning models served without a reasoning parser (DeepSeek-R1 distills,
// QwQ, Qwen3 in thinking mode) write their thinking into the reply:
// "<think>…</think>" (also <thinking> and <reasoning>), a block whose close
// was cut by the token limit, or — when the chat template opened the block
// in the prompt — reasoning ending in a lone "</think>". Visible removes all
// of these; Filter does the same on a stream, holding back what may be
// reasoning so the user never sees it while the answer still streams.
//
// Object picks the JSON object of a reply by the keys the caller expects,
// not by the first braces: prose, code fences and reasoning around it (even
// reasoning containing {"maybe": 1}) do not hide it. The package imports only
// the standard library.
package replytext
