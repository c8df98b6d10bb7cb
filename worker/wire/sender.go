package wire

import (
	"net/http"
	"strconv"
	"strings"
)

// SenderUnknown is the sender the receiver logs for a request that
// carried no token: sent to the bare URL rather than to the one a process
// was given, or under a prefix that is not a token.
const SenderUnknown = "unknown"

// senderPrefix starts the path of every request a process given a sender
// URL makes: /s/<token>/send, /s/<token>/receipt, /s/<token>/ping.
const senderPrefix = "/s/"

// senderWildcard names the token's path segment in the receiver's routes.
const senderWildcard = "sender"

// Token is the sender token of a trial's n-th process (from 1), which the
// parent mints before it starts the process and a fold derives again from
// the process's place in the trial.
func Token(n int) string { return "p" + strconv.Itoa(n) }

// isToken reports whether s is a token as Token makes them: p and a
// number from 1, without leading zeros.
func isToken(s string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "p"))
	return err == nil && n >= 1 && s == Token(n)
}

// SenderURL is the receiver URL the parent gives one process: base with
// the process's token as a path prefix, so that a program that appends
// /send to the URL it is given names its sender without knowing it.
func SenderURL(base, token string) string { return base + senderPrefix + token }

// SenderOf is the token in a URL made by SenderURL, and base the URL
// without it; token is empty for a URL without one, such as a folder of
// format 4 or older records, and for one whose prefix is not a token.
func SenderOf(url string) (base, token string) {
	i := strings.LastIndex(url, senderPrefix)
	if i < 0 || !isToken(url[i+len(senderPrefix):]) {
		return url, ""
	}
	return url[:i], url[i+len(senderPrefix):]
}

// Handle serves h on mux for method and path, both bare and under a
// sender's prefix, which SenderOfRequest reads.
func Handle(mux *http.ServeMux, method, path string, h http.HandlerFunc) {
	mux.HandleFunc(method+" "+path, h)
	mux.HandleFunc(method+" "+senderPrefix+"{"+senderWildcard+"}"+path, h)
}

// SenderOfRequest is the token of the process that sent req, routed by
// Handle: SenderUnknown when its path has no prefix, or a
// prefix that is not a token.
func SenderOfRequest(req *http.Request) string {
	if tok := req.PathValue(senderWildcard); isToken(tok) {
		return tok
	}
	return SenderUnknown
}
