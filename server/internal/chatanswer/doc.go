// Package chatanswer is the chat answer every text protocol (Chat
// Completions, Responses, MCP, a run's record) makes of a run's events:
// the Renderer splits them into status lines, the plan and step trace and
// the answer's text; the rest says how an answer ends (the outcomes of
// side effects, the approval asked, how the run stopped).
package chatanswer
