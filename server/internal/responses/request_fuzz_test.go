package responses

import (
	"encoding/json"
	"errors"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// FuzzResponsesRequest: whatever a client posts to /v1/responses, the
// decoder never panics; it refuses with a 400 naming the field (never
// another kind of error), or returns a request the handler can run on: a
// model, at most MaxItems items within MaxItemBytes, the last a non-blank
// user message, ids of bounded length, metadata within OpenAI's limits.
// The seed corpus is in testdata/fuzz/FuzzResponsesRequest. Run longer:
//
//	go test -run '^$' -fuzz FuzzResponsesRequest -fuzztime 60s ./server/internal/responses/
func FuzzResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"capgraph","input":"What is the beam current?"}`,
		`{"model":"capgraph","input":[{"role":"user","content":"hi"}],"stream":true,"instructions":"be brief","metadata":{"k":"v"}}`,
		`{"model":"capgraph","input":[{"type":"item_reference","id":"msg_6368_00"},{"type":"message","role":"user","content":[{"type":"input_text","text":"yes"}]}],"previous_response_id":"resp_6368_00"}`,
		`{"model":"capgraph","input":[{"role":"assistant","content":[{"type":"output_text","text":"Approval ID: AP-7F3KQ2ZD"}]},{"role":"user","content":"yes"}]}`,
		`{"model":"capgraph","input":"hi","tools":[{"type":"function"}]}`,
		`{"model":"capgraph","input":"hi","text":{"format":{"type":"json_schema"}}}`,
		`{"model":"capgraph","input":"hi"} trailing`,
		`{"model":"capgraph","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`,
		`{"model":"capgraph","input":[{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"model":"capgraph","input":[{"role":"user","content":[{"type":"input_text"}]}]}`,
		`{"model":1,"input":null}`, `[]`, `null`, `{}`, `"x"`, `{"model":"capgraph","input":"\ud800"}`,
		`{"model":"capgraph","input":[[[[[[[[[[]]]]]]]]]]}`, `{"model":"capgraph","input":"hi","store":false}`,
		`{"model":"capgraph","input":"hi","metadata":{"":""}}`, `{"model":"capgraph","input":"hi","tool_choice":{"type":"function"}}`,
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxItems: 8, MaxItemBytes: 256}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(body, lim)
		if err != nil {
			var re *apierror.RequestError
			if !errors.As(err, &re) || !errors.Is(err, apierror.ErrBadRequest) || re.Param == "" || re.Message == "" {
				t.Fatalf("decode(%q): %#v is not a 400 naming a field", body, err)
			}
			if strings.Contains(err.Error(), "json: cannot unmarshal") || strings.Contains(err.Error(), "Go value") {
				t.Fatalf("decode(%q): the error shows Go internals: %v", body, err)
			}
			return
		}
		if req.Model == "" || len(req.Items) == 0 || len(req.Items) > lim.MaxItems {
			t.Fatalf("decode(%q) = %+v: model or item count", body, req)
		}
		for _, it := range req.Items {
			if len(it.Text) > lim.MaxItemBytes || len(it.ID) > maxResponseIDLen || (it.Ref && (it.ID == "" || it.Role != "")) {
				t.Fatalf("decode(%q): item %+v out of bounds", body, it)
			}
		}
		last := req.Items[len(req.Items)-1]
		if last.Role != "user" || strings.TrimSpace(last.Text) == "" {
			t.Fatalf("decode(%q): last item %+v", body, last)
		}
		if len(req.Metadata) > reqbody.MaxMetadataKeys || len(req.PreviousResponseID) > maxResponseIDLen {
			t.Fatalf("decode(%q): metadata or id out of bounds", body)
		}
		// A valid request stays valid once re-encoded: nothing depended on
		// how the client spelled it.
		again, err := json.Marshal(map[string]any{"model": req.Model, "input": last.Text, "metadata": req.Metadata})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(again, lim); err != nil {
			t.Fatalf("decode(%q) ok, its re-encoding %s: %v", body, again, err)
		}
	})
}
