package subject

import (
	"strconv"
	"strings"

	"idemlab/experiments/receiver"
)

// TableSends is the receiver's log of every send of a trial, which the
// parent reads from the receiver it runs for a subject that sends and
// adds to the state as one more table.
const TableSends = "receiver_log"

// SendRow renders one receiver log entry as a state row, its sender last.
func SendRow(e receiver.Entry) string {
	return strings.Join([]string{strconv.Itoa(e.Seq), e.Item, e.Step, e.Outcome, strconv.FormatInt(e.Generation, 10), e.Receipt, e.Sender}, "|")
}

// Send is a parsed receiver log row. Sender is empty in a row of a
// folder of format 4 or older, which has six fields.
type Send struct {
	Seq                          int
	Item, Step, Outcome, Receipt string
	Gen                          int64
	Sender                       string
}

// ParseSend reads a row SendRow rendered; ok is false for a row that is
// not one: a sender field present but empty, or a number that is not.
func ParseSend(r string) (Send, bool) {
	f := strings.Split(r, "|")
	if len(f) != 6 && len(f) != 7 {
		return Send{}, false
	}
	seq, err1 := strconv.Atoi(f[0])
	gen, err2 := strconv.ParseInt(f[4], 10, 64)
	x := Send{Seq: seq, Item: f[1], Step: f[2], Outcome: f[3], Gen: gen, Receipt: f[5]}
	if len(f) == 7 {
		x.Sender = f[6]
		if x.Sender == "" {
			return x, false
		}
	}
	return x, err1 == nil && err2 == nil
}

// Accepted says the receiver accepted the send.
func (s Send) Accepted() bool {
	return s.Outcome == receiver.SendAccepted || s.Outcome == receiver.SendAcceptedNoReply
}

// Sends parses the receiver log rows of s; a row that does not parse is
// left out, and the subject's CheckRows reports it.
func Sends(s State) []Send {
	var out []Send
	for _, r := range s[TableSends] {
		if x, ok := ParseSend(r); ok {
			out = append(out, x)
		}
	}
	return out
}
