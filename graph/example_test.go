package graph_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/capgraph/capgraph/graph"
)

// Doc is the state of the examples; Note is the update its nodes return.
type Doc struct {
	Lines []string `json:"lines"`
}

type Note struct {
	Line string `json:"line"`
}

func addLine(d Doc, n Note) (Doc, error) {
	d.Lines = append(d.Lines[:len(d.Lines):len(d.Lines)], n.Line)
	return d, nil
}

func Example() {
	g := graph.New(graph.Config[Doc, Note]{Apply: addLine})
	g.AddNode("draft", func(ctx context.Context, d Doc) (Note, error) {
		return Note{Line: fmt.Sprintf("draft %d", len(d.Lines)+1)}, nil
	})
	g.AddNode("publish", func(ctx context.Context, d Doc) (Note, error) {
		return Note{Line: "published"}, nil
	})
	// Draft twice, then publish: the route reads only the state.
	g.AddConditionalEdges("draft", func(d Doc) graph.Route {
		if len(d.Lines) < 2 {
			return graph.Route{To: []string{"draft"}}
		}
		return graph.Route{To: []string{"publish"}}
	}, "draft", "publish")
	g.AddEdge("publish", graph.End)
	g.SetEntry("draft")

	c, err := g.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Run(context.Background(), "thread-1", Doc{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Steps, res.State.Lines)
	for _, e := range res.Trace.All() {
		if e.Kind == graph.EventRoute {
			fmt.Println(e.Node, "->", e.To)
		}
	}
	// Output:
	// done 3 [draft 1 draft 2 published]
	// draft -> [draft]
	// draft -> [publish]
	// publish -> [__end__]
}

func ExampleCompiled_Resume() {
	g := graph.New(graph.Config[Doc, Note]{Apply: addLine})
	g.AddNode("approve", func(ctx context.Context, d Doc) (Note, error) {
		answer, ok := graph.ResumeValue(ctx)
		if !ok {
			// No goroutine waits: the run stops here with a checkpoint.
			return Note{}, graph.Interrupt(map[string]string{"question": "publish?"})
		}
		var yes bool
		if err := json.Unmarshal(answer, &yes); err != nil {
			return Note{}, err
		}
		return Note{Line: fmt.Sprintf("approved: %v", yes)}, nil
	})
	g.AddEdge("approve", graph.End).SetEntry("approve")
	c, err := g.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	res, _ := c.Run(ctx, "thread-2", Doc{})
	fmt.Println(res.Status, res.Interrupts[0].Node, string(res.Interrupts[0].Payload))

	// Later, possibly in another process sharing the store:
	res, err = c.Resume(ctx, "thread-2", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.State.Lines)
	// Output:
	// interrupted approve {"question":"publish?"}
	// done [approved: true]
}

func ExampleGraph_Compile() {
	g := graph.New(graph.Config[Doc, Note]{Apply: addLine})
	g.AddNode("a", func(context.Context, Doc) (Note, error) { return Note{}, nil })
	g.AddEdge("a", "missing")
	_, err := g.Compile()
	fmt.Println(err)
	// Output:
	// graph: invalid graph: no_entry; unknown_target: a -> missing
}
