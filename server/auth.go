package server

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// tokenCookie carries the token of a browser that signed in at /login: a
// browser cannot add an Authorization header to the UI's page loads.
const tokenCookie = "sparkprof_token"

// requestToken returns the token r carries: as a bearer token (the
// Pyroscope agents' authToken), as the password of basic authentication
// (agents set up for Grafana Cloud send user and password), or in the
// cookie /login sets.
func requestToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return t
		}
		if _, pw, ok := r.BasicAuth(); ok {
			return pw
		}
		return ""
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// access is what a request needs of its token.
type access int

const (
	// public needs no token: health checks and signing in.
	public access = iota
	// anyToken needs a token, of any scope: the UI's page and assets,
	// the agent jar.
	anyToken
	// readTenant and writeTenant need a token that may read (queries),
	// or write (uploads, imports), the request's tenant.
	readTenant
	writeTenant
	// server needs a token that may read every tenant: the server's own
	// metrics and Go profiles span them all.
	server
)

// accessOf says what r needs of its token.
func accessOf(r *http.Request) access {
	p := r.URL.Path
	switch {
	case p == "/healthz" || p == "/ready" || p == "/login":
		return public
	case p == "/" || strings.HasPrefix(p, "/ui/") || p == "/agent.jar":
		return anyToken
	case p == "/metrics" || strings.HasPrefix(p, "/debug/pprof/"):
		return server
	case r.Method == http.MethodPost && (p == "/ingest" || p == "/api/v1/import" || strings.HasPrefix(p, "/push.v1.PusherService/")):
		return writeTenant
	}
	return readTenant
}

// authorize checks r's token against what r needs (accessOf): it answers
// 401 without a known token and 403 with one that may not do what r
// asks, and returns false then. A token of one tenant that names none
// (no X-Scope-OrgID) is its tenant's: r gets the header.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	need := accessOf(r)
	if s.tokens == nil || need == public {
		return true
	}
	g, ok := s.tokens.Grant(requestToken(r))
	if !ok {
		s.unauthorized(w, r)
		return false
	}
	var why string
	switch need {
	case server:
		if g.Tenants != nil || g.Scope&ScopeRead == 0 {
			why = "this token may not read the server's own metrics and profiles: only a token that may read every tenant (* in the token file) may"
		}
	case readTenant, writeTenant:
		if r.Header.Get(tenantHeader) == "" && len(g.Tenants) == 1 {
			r.Header.Set(tenantHeader, g.Tenants[0])
		}
		scope, verb := ScopeRead, "read"
		if need == writeTenant {
			scope, verb = ScopeWrite, "write"
		}
		if !g.allows(tenant(r), scope) {
			why = fmt.Sprintf("this token may not %s tenant %q (X-Scope-OrgID): the token file says what it may", verb, tenant(r))
		}
	}
	if why == "" {
		return true
	}
	if need == writeTenant && r.URL.Path == "/ingest" {
		s.metrics.uploadError(http.StatusForbidden)
		s.ingest.Senders().Failed(uploadSender(r), why)
	}
	httpError(w, http.StatusForbidden, "%s", why)
	return false
}

// unauthorized answers a request without the token: a browser asking for
// a page gets the sign-in form, anything else a JSON error.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
		s.loginPage(w, r.URL.RequestURI(), "")
		return
	}
	const msg = "missing or wrong bearer token: send a token of --auth-token-file as \"Authorization: Bearer TOKEN\""
	if r.URL.Path == "/ingest" {
		// An agent with a wrong token is a reason nothing shows up: the
		// agents list says so.
		s.metrics.uploadError(http.StatusUnauthorized)
		s.ingest.Senders().Failed(uploadSender(r), msg)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="sparkprof"`)
	httpError(w, http.StatusUnauthorized, msg)
}

// handleLogin checks the token a browser posts from the sign-in form and,
// when it is right, keeps it in a cookie and goes on to the page asked for.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.FormValue("next"))
	token := r.FormValue("token")
	if s.tokens == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	g, ok := s.tokens.Grant(token)
	if !ok {
		s.loginPage(w, next, "That is not one of the server's tokens.")
		return
	}
	if g.Scope&ScopeRead == 0 {
		s.loginPage(w, next, "That token may only send profiles, not read them.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     tokenCookie,
		Value:    token,
		Path:     "/",
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode, // no other site's form can use it
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// localPath returns next when it is a path of this server, else "/": no
// sign-in redirects elsewhere. Browsers read a backslash as a slash, so
// "/\host" is another host's address as "//host" is; control characters
// they drop.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(next, "/") ||
		strings.HasPrefix(next, "//") || strings.ContainsFunc(next, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
		return "/"
	}
	return next
}

func (s *Server) loginPage(w http.ResponseWriter, next, problem string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	// The hash of the UI's page asked for never reaches the server: the
	// form's script adds it to next.
	if err := loginTmpl.Execute(w, struct{ Next, Problem string }{next, problem}); err != nil {
		s.log.Error("sign-in page", "err", err)
	}
}

var loginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sparkprof: sign in</title>
<style>body{font:15px system-ui,sans-serif;max-width:28em;margin:4em auto;color:#222}
input{font:inherit;padding:.3em;width:100%;box-sizing:border-box;margin:.5em 0}
.problem{color:#b00}</style></head>
<body><h1>sparkprof</h1>
<p>This server was started with <code>--auth-token-file</code>. Enter the token in that file.</p>
{{if .Problem}}<p class="problem">{{.Problem}}</p>{{end}}
<form method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<input type="password" name="token" autocomplete="current-password" autofocus required aria-label="token">
<input type="submit" value="Sign in">
</form>
<script>document.forms[0].next.value += location.hash;</script>
</body></html>
`))
