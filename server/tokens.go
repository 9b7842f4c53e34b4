package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/store"
)

// Scope is what a token may do: read (queries, the UI), write (uploads,
// imports), or both.
type Scope int

// The scopes.
const (
	ScopeRead Scope = 1 << iota
	ScopeWrite
)

// Grant is what one token may do, and for which tenants.
type Grant struct {
	Scope Scope
	// Tenants are the tenants the token may name (X-Scope-OrgID), "" the
	// default tenant; nil means every tenant.
	Tenants []string
}

// allows reports whether g may use tenant with scope.
func (g Grant) allows(tenant string, scope Scope) bool {
	return g.Scope&scope == scope && (g.Tenants == nil || slices.Contains(g.Tenants, tenant))
}

// Tokens maps the digests of tokens (tokenDigest) to their grants: a
// token is looked up by its digest, so that the lookup's time tells
// nothing about the tokens.
type Tokens map[[sha256.Size]byte]Grant

func tokenDigest(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// Grant returns the grant of token, and whether it has one.
func (ts Tokens) Grant(token string) (Grant, bool) {
	if token == "" {
		return Grant{}, false
	}
	g, ok := ts[tokenDigest(token)]
	return g, ok
}

// ParseTokens reads a token file (serve --auth-token-file): a line per
// token, "TOKEN SCOPE TENANTS", where SCOPE is read, write or read,write
// and TENANTS a comma-separated list of tenants (as X-Scope-OrgID names
// them; "-" for the default tenant, "*" for all); or a file of one token
// alone, which may read and write every tenant. Blank lines and lines
// starting with # are skipped. Errors name the line.
func ParseTokens(data []byte) (Tokens, error) {
	ts := Tokens{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		var g Grant
		switch len(fields) {
		case 1:
			g.Scope = ScopeRead | ScopeWrite
		case 3:
			var err error
			if g.Scope, err = parseScope(fields[1]); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if g.Tenants, err = parseTenants(fields[2]); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		default:
			return nil, fmt.Errorf("line %d: %d fields: want TOKEN, or TOKEN SCOPE TENANTS (e.g. s3cr3t write team-a,team-b)", n, len(fields))
		}
		d := tokenDigest(fields[0])
		if _, dup := ts[d]; dup {
			return nil, fmt.Errorf("line %d: a token listed twice", n)
		}
		ts[d] = g
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no token: write one in it")
	}
	return ts, nil
}

func parseScope(s string) (Scope, error) {
	var sc Scope
	for w := range strings.SplitSeq(s, ",") {
		switch w {
		case "read":
			sc |= ScopeRead
		case "write":
			sc |= ScopeWrite
		default:
			return 0, fmt.Errorf("scope %q: want read, write or read,write", s)
		}
	}
	return sc, nil
}

func parseTenants(s string) ([]string, error) {
	if s == "*" {
		return nil, nil
	}
	ts := []string{}
	for t := range strings.SplitSeq(s, ",") {
		switch {
		case t == "-":
			t = ""
		case t == "" || t == "*":
			return nil, fmt.Errorf("tenants %q: want names separated by commas (- for the default tenant), or * alone for all", s)
		}
		if err := store.CheckTenant(t); err != nil {
			return nil, fmt.Errorf("tenants: %w", err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}
