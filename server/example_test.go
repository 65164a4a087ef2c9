package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/server"
)

func ExampleParseAPIKeys() {
	ps, err := server.ParseAPIKeys("ops=sk-ops-secret-0123456789, webui=sk-webui-secret-0123456789")
	if err != nil {
		fmt.Println(err)
		return
	}
	ps[1].TrustedFrontend = true // the Open WebUI key may forward chat ids
	for _, p := range ps {
		fmt.Println(p.Name, p.Tenant, p.TrustedFrontend, p.KeySHA256 == server.HashKey("sk-"+p.Name+"-secret-0123456789"))
	}
	// Output:
	// ops default false true
	// webui default true true
}

func ExampleNew() {
	hello := capabilities.Define(capabilities.Definition{
		Name: "hello", Description: "Say hello", Provides: []string{"GREETING"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("GREETING", "hello", "hello"), nil
		},
	})
	reg := capabilities.NewRegistry()
	_ = reg.Register(hello)
	ag, err := agent.New(agent.Config{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := server.New(server.Config{
		Runner: ag,
		Audit:  server.NewJSONLAudit(os.Stderr),
		Auth: server.Auth{
			Principals: []server.Principal{{Name: "ops", KeySHA256: server.HashKey("sk-ops")}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler()) // or srv.Run(ctx) on Config.Addr
	defer ts.Close()

	req, _ := http.NewRequest("GET", ts.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-ops")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// 200 {"data":[{"id":"capgraph","object":"model","created":1767225600,"owned_by":"capgraph"}],"object":"list"}
}
