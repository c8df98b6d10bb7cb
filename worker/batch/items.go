// Package batch is the child side of article 002: a batch of items, each
// run through three steps, whose progress is kept in a SQLite step journal
// so that a rerun skips what finished and holds what may have been sent.
package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The article's three steps, in the order every item runs them.
const (
	StepValidate  = "validate"
	StepTransform = "transform"
	StepNotify    = "notify_external"
)

// Steps lists the steps in order.
var Steps = [...]string{StepValidate, StepTransform, StepNotify}

// IsSideEffect reports whether a step reaches outside the process. Only
// such a step can leave the question "sent or not" after a failure.
func IsSideEffect(step string) bool { return step == StepNotify }

// Item is one unit of the batch. The JSON names are the article's.
type Item struct {
	ID   string `json:"id"`
	Body string `json:"body"`
}

// ItemID names the i-th item (1-based) as the article does: item-001.
func ItemID(i int) string { return fmt.Sprintf("item-%03d", i) }

// ItemBody is the article's body of the i-th item.
func ItemBody(i int) string { return "payload-" + strconv.Itoa(i) }

// ChangedBody is the body given to an item whose input changed between
// runs.
func ChangedBody(i int) string { return ItemBody(i) + "-changed" }

// Items builds items 1..n. changed, when in 1..n, gets ChangedBody, which
// is how a run sees an input that differs from the journal's.
func Items(n, changed int) []Item {
	items := make([]Item, n)
	for i := 1; i <= n; i++ {
		items[i-1] = Item{ID: ItemID(i), Body: ItemBody(i)}
		if i == changed {
			items[i-1].Body = ChangedBody(i)
		}
	}
	return items
}

// CanonicalJSON encodes an item with sorted keys, ", " and ": " separators
// and non-ASCII escaped, byte for byte as the article's Python encodes it
// (json.dumps(item, sort_keys=True)). Matching it lets a journal written by
// either program be resumed by the other.
func CanonicalJSON(it Item) []byte {
	b := make([]byte, 0, 32+len(it.ID)+len(it.Body))
	b = append(b, `{"body": `...)
	b = appendPyString(b, it.Body)
	b = append(b, `, "id": `...)
	b = appendPyString(b, it.ID)
	return append(b, '}')
}

// Digest is the hex SHA-256 of the item's canonical JSON.
func Digest(it Item) string {
	sum := sha256.Sum256(CanonicalJSON(it))
	return hex.EncodeToString(sum[:])
}

const hexDigits = "0123456789abcdef"

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
}

// appendPyString quotes s as Python's json module does with
// ensure_ascii=True.
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20 || r == 0x7f:
			b = appendU(b, r)
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		case r > 0xffff:
			r -= 0x10000
			b = appendU(b, 0xd800+(r>>10))
			b = appendU(b, 0xdc00+(r&0x3ff))
		default:
			b = appendU(b, r)
		}
	}
	return append(b, '"')
}

// CleanPoints are the crash points a run over n fresh items passes when
// nothing fails, in order: before and after each item's side-effect send.
func CleanPoints(n int) []string {
	var out []string
	for _, it := range Items(n, 0) {
		for _, step := range Steps {
			if IsSideEffect(step) {
				out = append(out, ItemPoint(PointBeforeSend, it.ID), ItemPoint(PointAfterSendAccepted, it.ID))
			}
		}
	}
	return out
}
