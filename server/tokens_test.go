package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
)

const tokenFile = `# token  scope       tenants
admin      read,write  *
agent-a    write       team-a
grafana-a  read        team-a
reader     read        team-a,-
`

func TestParseTokens(t *testing.T) {
	ts, err := ParseTokens([]byte(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]Grant{
		"admin":     {Scope: ScopeRead | ScopeWrite},
		"agent-a":   {Scope: ScopeWrite, Tenants: []string{"team-a"}},
		"grafana-a": {Scope: ScopeRead, Tenants: []string{"team-a"}},
		"reader":    {Scope: ScopeRead, Tenants: []string{"team-a", ""}},
	} {
		g, ok := ts.Grant(token)
		if !ok || g.Scope != want.Scope || strings.Join(g.Tenants, "|") != strings.Join(want.Tenants, "|") || (g.Tenants == nil) != (want.Tenants == nil) {
			t.Errorf("%s: %+v, %v; want %+v", token, g, ok, want)
		}
	}
	if g, ok := mustTokens(t, "just-one\n").Grant("just-one"); !ok || g.Scope != ScopeRead|ScopeWrite || g.Tenants != nil {
		t.Errorf("a file of one token: %+v %v, want every tenant, read and write", g, ok)
	}
	for _, bad := range []string{"", "# only a comment\n", "a read\n", "a admin team\n", "a read team,,b\n", "a read *,b\n", "a read x\na write y\n", "a read t\x1b\n"} {
		if _, err := ParseTokens([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func mustTokens(t *testing.T, s string) Tokens {
	t.Helper()
	ts, err := ParseTokens([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// route is a request of every kind the server answers.
type route struct{ method, path string }

// routes lists one request per endpoint: the API's table, Pyroscope's
// Connect APIs, the server's own and the UI's.
func routes(s *Server) []route {
	var rs []route
	for _, e := range s.api() {
		method, path, _ := strings.Cut(e.pattern, " ")
		path = strings.NewReplacer("{id}", "app-1", "{stage}", "1").Replace(path)
		rs = append(rs, route{method, path})
	}
	for _, p := range []string{querierv1connect.QuerierServiceProfileTypesProcedure, querierv1connect.QuerierServiceLabelNamesProcedure,
		querierv1connect.QuerierServiceLabelValuesProcedure, querierv1connect.QuerierServiceSeriesProcedure,
		querierv1connect.QuerierServiceSelectMergeStacktracesProcedure, querierv1connect.QuerierServiceSelectMergeProfileProcedure,
		querierv1connect.QuerierServiceSelectSeriesProcedure, querierv1connect.QuerierServiceDiffProcedure} {
		rs = append(rs, route{"POST", p})
	}
	return append(rs, route{"POST", "/push.v1.PusherService/Push"}, route{"GET", "/metrics"}, route{"GET", "/debug/pprof/heap"},
		route{"GET", "/"}, route{"GET", "/ui/app.js"}, route{"GET", "/agent.jar"})
}

// Every endpoint answers 401 without a known token, 403 to a token that
// may not do what it asks or for the tenant it names, and serves one
// that may.
func TestTokenScopesEveryEndpoint(t *testing.T) {
	ts, _ := newTestServer(t, Config{Tokens: mustTokens(t, tokenFile)})
	s := ts.Config.Handler.(*Server)
	do := func(rt route, token, tenant string) (int, string) {
		req, _ := http.NewRequest(rt.method, ts.URL+rt.path, strings.NewReader("main;work 1\n"))
		if rt.method == "POST" && strings.HasPrefix(rt.path, "/querier") || strings.HasPrefix(rt.path, "/push") {
			req.Header.Set("Content-Type", "application/json")
			req.Body = io.NopCloser(strings.NewReader("{}"))
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if tenant != "" {
			req.Header.Set("X-Scope-OrgID", tenant)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	denied := func(code int) bool { return code == 401 || code == 403 }
	for _, rt := range routes(s) {
		r := httptest.NewRequest(rt.method, rt.path, nil)
		need := accessOf(r)
		check := func(token, tenant string, wantDenied int) {
			t.Helper()
			code, body := do(rt, token, tenant)
			if wantDenied != 0 && code != wantDenied || wantDenied == 0 && denied(code) {
				t.Errorf("%s %s with token %q, tenant %q: %d %.120s; want %s", rt.method, rt.path, token, tenant, code, body,
					map[int]string{0: "served", 401: "401", 403: "403"}[wantDenied])
			}
		}
		check("", "", 401)
		check("wrong", "team-a", 401)
		switch need {
		case readTenant:
			check("grafana-a", "team-a", 0)
			check("grafana-a", "", 0) // its one tenant
			check("grafana-a", "team-b", 403)
			check("agent-a", "team-a", 403)
			check("reader", "", 0)
			check("admin", "team-b", 0)
		case writeTenant:
			check("agent-a", "team-a", 0)
			check("agent-a", "team-b", 403)
			check("grafana-a", "team-a", 403)
			check("admin", "team-b", 0)
		case server:
			check("admin", "", 0)
			check("grafana-a", "", 403)
			check("agent-a", "", 403)
		case anyToken:
			check("agent-a", "", 0)
			check("grafana-a", "", 0)
		default:
			t.Errorf("%s %s: access %d, want a token", rt.method, rt.path, need)
		}
	}
}

// An agent's write-only token stores into its tenant without naming it;
// that tenant's read token sees the samples, another tenant's nothing.
func TestTokenTenants(t *testing.T) {
	ts, _ := newTestServer(t, Config{Tokens: mustTokens(t, tokenFile)})
	q := url.Values{"name": {"app"}}
	if code := post(t, ts, q, "", []byte("a;b 5\n"), "Authorization", "Bearer agent-a"); code != 200 {
		t.Fatalf("agent upload: %d", code)
	}
	if got := render(t, ts, "app{}", "samples", "Authorization", "Bearer grafana-a").Flamebearer.NumTicks; got != 5 {
		t.Errorf("team-a's reader sees %d samples, want 5", got)
	}
	if got := render(t, ts, "app{}", "samples", "Authorization", "Bearer admin", "X-Scope-OrgID", "team-b").Flamebearer.NumTicks; got != 0 {
		t.Errorf("team-b sees %d of team-a's samples", got)
	}
	if got := render(t, ts, "app{}", "samples", "Authorization", "Bearer reader").Flamebearer.NumTicks; got != 0 {
		t.Errorf("the default tenant sees %d of team-a's samples", got)
	}
}
