package server

import (
	"crypto/subtle"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// tokenCookie carries the token of a browser that signed in at /login: a
// browser cannot add an Authorization header to the UI's page loads.
const tokenCookie = "sparkprof_token"

// authorized reports whether r carries the server's token: as a bearer
// token (the Pyroscope agents' authToken), as the password of basic
// authentication (agents set up for Grafana Cloud send user and password),
// or in the cookie /login sets.
func (s *Server) authorized(r *http.Request) bool {
	got := ""
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			got = t
		} else if _, pw, ok := r.BasicAuth(); ok {
			got = pw
		}
	} else if c, err := r.Cookie(tokenCookie); err == nil {
		got = c.Value
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AuthToken)) == 1
}

// unauthorized answers a request without the token: a browser asking for
// a page gets the sign-in form, anything else a JSON error.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
		s.loginPage(w, r.URL.RequestURI(), "")
		return
	}
	const msg = "missing or wrong bearer token: send the token of --auth-token-file as \"Authorization: Bearer TOKEN\""
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
	if s.cfg.AuthToken == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AuthToken)) != 1 {
		s.loginPage(w, next, "That is not the server's token.")
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
