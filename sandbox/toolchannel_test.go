package sandbox

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/violation"
)

// A configuration with APIs and no servers: the channel lists the APIs
// (with a query, what it found), and says there are no tools to call,
// which are neither listed nor counted as refused.
func TestToolChannelAPIs(t *testing.T) {
	docs, err := filepath.Abs("../apis/testdata/tracker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Tools.MaxCalls = 2 // each search counts as one
	cfg.Secrets = map[string]config.Secret{"TRACKER_TOKEN": {From: "env:X"}}
	cfg.APIs = map[string]config.API{"tracker": {Description: "Issues.", Hosts: []string{"tracker.example.com"}, Secrets: []string{"TRACKER_TOKEN"}, Docs: docs}}
	tools, err := NewTools(cfg, nil, nil)
	if err != nil || tools == nil {
		t.Fatalf("NewTools: %v, %v", tools, err)
	}
	defer tools.Close()
	if tools.APIs() == nil || len(tools.APIs().List()) != 1 {
		t.Fatalf("APIs() = %v", tools.APIs())
	}
	c, err := newToolChannel(tools, &jail.Spec{}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	c.serve("apis", toolbridge.Caller{})
	code, err := net.FileConn(c.Peer())
	if err != nil {
		t.Fatal(err)
	}
	defer code.Close()
	r := bufio.NewReader(code)
	ask := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(code, line+"\n"); err != nil {
			t.Fatal(err)
		}
		a, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := ask(`{"id":1,"method":"apis"}`); !strings.Contains(a, `"result":[{"name":"tracker","description":"Issues.","hosts":["tracker.example.com"],"base_urls":["https://tracker.example.com/api/v3"],"auth":[{"secret":"TRACKER_TOKEN","header":"Authorization: Bearer ${env.TRACKER_TOKEN}"}],"docs":"openapi","operations":6}]`) {
		t.Errorf("apis: %s", a)
	}
	if a := ask(`{"id":2,"method":"apis","query":"create issue"}`); !strings.Contains(a, `"matches":[{"method":"POST","path":"/repos/{owner}/{repo}/issues","operation_id":"issues/create","summary":"Create an issue","parameters":["owner","repo"]}`) {
		t.Errorf("apis with a query: %s", a)
	}
	// The second search is the execution's last: the third is a limit.
	if a := ask(`{"id":6,"method":"apis","query":"issue"}`); !strings.Contains(a, `"result":[`) {
		t.Errorf("a second search: %s", a)
	}
	if a := ask(`{"id":7,"method":"apis","query":"issue"}`); !strings.Contains(a, `"error":{"kind":"limit","message":"tools.apis: this execution has made its 2 tool calls and searches`) {
		t.Errorf("a third search: %s", a)
	}
	if a := ask(`{"id":8,"method":"apis"}`); !strings.Contains(a, `"result":[{"name":"tracker"`) {
		t.Errorf("the list of APIs past the limit: %s", a)
	}
	for _, line := range []string{`{"id":3,"method":"list"}`, `{"id":4,"method":"call","server":"x","tool":"y"}`, `{"id":5,"method":"resource","server":"x","uri":"u"}`} {
		if a := ask(line); !strings.Contains(a, `"error":{"kind":"error","message":"no tools are configured: the configuration of this execution has no servers"}`) {
			t.Errorf("%s: %s", line, a)
		}
	}
	c.Stop()
	if len(c.Calls()) != 0 || len(c.refused.list) != 1 || c.refused.list[0].Kind != violation.Limit {
		t.Errorf("calls %v, violations %v", c.Calls(), c.refused.list)
	}
}
