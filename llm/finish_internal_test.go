package llm

import "testing"

// Every provider's stop reasons map to one FinishReason.
func TestNormalizeFinish(t *testing.T) {
	tests := map[string]FinishReason{
		"stop": FinishStop, "length": FinishLength, "content_filter": FinishContentFilter, "tool_calls": FinishToolCalls, "function_call": FinishToolCalls, // OpenAI
		"end_turn": FinishStop, "stop_sequence": FinishStop, "max_tokens": FinishLength, "refusal": FinishContentFilter, "tool_use": FinishToolCalls, // Anthropic
		"FinishReasonStop": FinishStop, "FinishReasonMaxTokens": FinishLength, "FinishReasonSafety": FinishContentFilter, "FinishReasonRecitation": FinishContentFilter, // Gemini
		"": "", "null": "", "FinishReasonUnspecified": "", "load": "load",
	}
	for in, want := range tests {
		if got := normalizeFinish(in); got != want {
			t.Errorf("normalizeFinish(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGrowMaxTokens(t *testing.T) {
	for used, want := range map[int]int{0: GrownMaxTokensFloor, 50: GrownMaxTokensFloor, 3000: 6000, 20000: GrownMaxTokensCap, GrownMaxTokensCap: GrownMaxTokensCap} {
		if got := GrowMaxTokens(used); got != want {
			t.Errorf("GrowMaxTokens(%d) = %d, want %d", used, got, want)
		}
	}
}
