package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Replay is a command that runs part of a result again, such as one trial
// that broke an invariant. Args follow "experiment"; ReplayCommands adds
// the binary, the input and a fresh --out.
type Replay struct {
	What string
	Args []string
}

// ReplayCommands renders replays as command lines a user can paste: self
// (the binary as the user runs it, e.g. "go run ."), "experiment", the
// replay's flags, --input unless input is empty (the default), and --out
// with a folder beside base that does not exist yet, one per command.
func ReplayCommands(self, input, base string, rs []Replay) []string {
	var out []string
	n := 0
	for _, r := range rs {
		var dir string
		for {
			n++
			dir = fmt.Sprintf("%s-replay-%d", strings.TrimRight(base, `/\`), n)
			if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
		args := append([]string{"experiment"}, r.Args...)
		if input != "" {
			args = append(args, "--input", input)
		}
		args = append(args, "--out", dir)
		words := []string{self}
		for _, a := range args {
			words = append(words, ShellQuote(a))
		}
		out = append(out, strings.Join(words, " "))
	}
	return out
}

// ShellQuote leaves a word a POSIX shell reads as itself alone, and puts
// any other in single quotes.
func ShellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		plain = plain && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r))
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
