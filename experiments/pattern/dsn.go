package pattern

import (
	"net/url"
	"slices"
	"strings"
)

// sessionParams are the settings store.SessionDSN adds to a connection
// string as startup parameters, which pgx takes as they are.
var sessionParams = []string{"search_path", "default_transaction_isolation", "synchronous_commit"}

// ProgramDSN is target, a connection string store.SessionDSN made, as
// libpq reads one: psql, and the drivers built on libpq, refuse
// search_path and the other settings as connection keywords, so they go
// in options as -c switches, which the server reads at the start of the
// session just the same. It is pure, so the fold derives the environment
// a program got from the recorded target alone.
func ProgramDSN(target string) string {
	if u, err := url.Parse(target); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		var opts []string
		if o := q.Get("options"); o != "" {
			opts = append(opts, o)
		}
		for _, k := range sessionParams {
			if v := q.Get(k); v != "" {
				opts = append(opts, "-c "+k+"="+optionValue(v))
			}
			q.Del(k)
		}
		if len(opts) > 0 {
			q.Set("options", strings.Join(opts, " "))
		}
		// libpq decodes %XX in a URI, not + as a space; Encode writes a
		// literal + as %2B.
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String()
	}
	pairs := keyValues(target)
	var parts, opts []string
	settings := map[string]string{}
	for _, p := range pairs {
		switch {
		case slices.Contains(sessionParams, p[0]):
			settings[p[0]] = p[1]
		case p[0] == "options":
			opts = append(opts, p[1])
		default:
			parts = append(parts, p[0]+"="+libpqQuote(p[1]))
		}
	}
	for _, k := range sessionParams {
		if v, ok := settings[k]; ok && v != "" {
			opts = append(opts, "-c "+k+"="+optionValue(v))
		}
	}
	if len(opts) > 0 {
		parts = append(parts, "options="+libpqQuote(strings.Join(opts, " ")))
	}
	return strings.Join(parts, " ")
}

// optionValue escapes the spaces of a -c value, as the server splits
// options on unescaped spaces ("read committed").
func optionValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, " ", `\ `).Replace(v)
}

// libpqQuote quotes a key=value value as libpq reads it.
func libpqQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " '\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// keyValues splits a libpq key=value string into its pairs, in order,
// undoing the quoting: a value in single quotes may hold spaces, with \'
// and \\ inside.
func keyValues(s string) [][2]string {
	var out [][2]string
	rs := []rune(s)
	i := 0
	skip := func() {
		for i < len(rs) && (rs[i] == ' ' || rs[i] == '\t' || rs[i] == '\n') {
			i++
		}
	}
	for {
		skip()
		if i >= len(rs) {
			return out
		}
		start := i
		for i < len(rs) && rs[i] != '=' && rs[i] != ' ' {
			i++
		}
		key := string(rs[start:i])
		skip()
		if i < len(rs) && rs[i] == '=' {
			i++
		}
		skip()
		var v strings.Builder
		if i < len(rs) && rs[i] == '\'' {
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				if rs[i] == '\\' && i+1 < len(rs) {
					i++
				}
				v.WriteRune(rs[i])
			}
			i++
		} else {
			for ; i < len(rs) && rs[i] != ' '; i++ {
				if rs[i] == '\\' && i+1 < len(rs) {
					i++
				}
				v.WriteRune(rs[i])
			}
		}
		out = append(out, [2]string{key, v.String()})
	}
}
