package openai

import "testing"

func TestFrontendTask(t *testing.T) {
	hist := "\n### Chat History:\n<chat_history>\nUSER: What is the beam current of the storage ring right now, please?\nASSISTANT: 500 mA\n</chat_history>"
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"title", "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history." + hist, `{"title":"What is the beam current of the storage ring…"}`, true},
		{"tags", "### Task:\nGenerate 1-3 broad tags categorizing the main themes of the chat history." + hist, `{"tags":["General"]}`, true},
		{"follow-ups", "### Task:\nSuggest 3-5 relevant follow-up questions or prompts." + hist, `{"follow_ups":[]}`, true},
		{"queries", "### Task:\nAnalyze the chat history to determine the necessity of generating search queries." + hist, `{"queries":[]}`, true},
		{"other task", "### Task:\nDo something else." + hist, "", true},
		{"short title", "### Task:\nGenerate a title.\n<chat_history>\nUSER: hi\n</chat_history>", `{"title":"hi"}`, true},
		{"no user line", "### Task:\nGenerate a title.\n<chat_history>\n</chat_history>", `{"title":"New chat"}`, true},
		{"a question", "What is the beam current?", "", false},
		{"task without history", "### Task: set the corrector to 1.5 A", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := frontendTask(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("got %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
