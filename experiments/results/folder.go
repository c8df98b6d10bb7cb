// Package results reads a results folder as evidence. A folder is untrusted
// input: anyone could have edited it, so every file is opened without
// following links, read with a size cap, and parsed strictly, and every
// problem becomes a finding that names the file and the field instead of a
// panic or a silent default. The experiment reads its own staging folder
// through the same loader before it reaches a verdict, so a run and a later
// verify see exactly the same records.
package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Size caps. A results folder from a real run is a few hundred KiB; the caps
// only keep a hostile or corrupted folder from exhausting memory.
const (
	DefaultMaxResultsBytes = 32 << 20
	DefaultMaxJSONLBytes   = 256 << 20
	DefaultMaxLineBytes    = 16 << 20
	// maxEntries bounds the walk over the folder.
	maxEntries = 10000
)

// Limits are the size caps applied while loading. Zero fields take the
// defaults, so tests can lower one cap at a time.
type Limits struct {
	ResultsBytes int64
	JSONLBytes   int64
	LineBytes    int
}

func (l Limits) withDefaults() Limits {
	if l.ResultsBytes <= 0 {
		l.ResultsBytes = DefaultMaxResultsBytes
	}
	if l.JSONLBytes <= 0 {
		l.JSONLBytes = DefaultMaxJSONLBytes
	}
	if l.LineBytes <= 0 {
		l.LineBytes = DefaultMaxLineBytes
	}
	return l
}

// Line is one line of observations.jsonl with its 1-based line number, so
// findings can point at it. Scenario and Condition are read from the line;
// the rest is the scenario's to decode.
type Line struct {
	N         int
	Scenario  string
	Condition string
	Raw       json.RawMessage
	// Shard is the shard whose block of a merged folder holds the line;
	// 0 in a folder of one run.
	Shard int
}

// Process is one line of raw-processes.jsonl with its line number and, in
// a merged folder, its shard.
type Process struct {
	N     int
	Shard int
	ProcessRecord
}

// Folder is a loaded results folder. Results is nil when results.json could
// not be read or parsed, and Input is nil when the folder carries no copy
// of its input file; the findings then say why.
type Folder struct {
	Dir          string
	ResultsRaw   []byte
	Results      *Results
	Input        []byte
	Observations []Line
	Processes    []Process
	Findings     []Finding
	lim          Limits
}

// ErrNotFolder is returned when DIR itself cannot be used; problems inside
// the folder are findings instead.
var ErrNotFolder = errors.New("not a results folder")

// Load reads the files of dir. It returns an error only when dir is not a
// readable folder; everything wrong inside it is a finding. results.json
// may be absent when a run reads its own staging folder before writing it.
func Load(dir string, lim Limits) (*Folder, error) {
	return load(dir, lim, true)
}

// LoadRecords reads only the two JSONL files and the input copy: what a run
// has recorded before it writes results.json.
func LoadRecords(dir string, lim Limits) (*Folder, error) {
	return load(dir, lim, false)
}

func load(dir string, lim Limits, withResults bool) (*Folder, error) {
	lim = lim.withDefaults()
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotFolder, dir, errors.Unwrap(err))
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%w: %s: is a symbolic link; pass the folder itself", ErrNotFolder, dir)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s: is not a folder", ErrNotFolder, dir)
	}
	f := &Folder{Dir: dir, lim: lim}
	f.scanEntries()
	if withResults {
		f.loadResults(lim)
	}
	f.loadInput(lim)
	f.loadObservations(lim)
	f.loadProcesses(lim)
	return f, nil
}

func (f *Folder) add(file, field, format string, args ...any) {
	f.Findings = append(f.Findings, Finding{File: file, Field: field, Message: fmt.Sprintf(format, args...)})
}

// scanEntries refuses links and special files anywhere in the folder: a link
// could make verify read, and report show, a file outside the folder.
func (f *Folder) scanEntries() {
	n := 0
	err := filepath.WalkDir(f.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			f.add(relName(f.Dir, p), "", "cannot read: %v", errors.Unwrap(err))
			return nil
		}
		n++
		if n > maxEntries {
			f.add(".", "", "more than %d entries; not a results folder", maxEntries)
			return filepath.SkipAll
		}
		rel := relName(f.Dir, p)
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			where := "inside"
			if escapes(f.Dir, p, target) {
				where = "outside"
			}
			f.add(rel, "", "is a symbolic link to %q (pointing %s the folder); a results folder holds only regular files", target, where)
		case t.IsDir(), t.IsRegular():
		default:
			f.add(rel, "", "is not a regular file (%v)", t)
		}
		return nil
	})
	if err != nil {
		f.add(".", "", "cannot walk the folder: %v", err)
	}
}

func relName(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// escapes says whether a link at p with the given target leaves dir.
func escapes(dir, p, target string) bool {
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	abs, err1 := filepath.Abs(target)
	root, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return true
	}
	rel, err := filepath.Rel(root, abs)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openRegular opens name inside the folder without following a link and
// without blocking on a FIFO, and checks it is a regular file under max
// bytes.
func (f *Folder) openRegular(name string, max int64) (*os.File, bool) {
	p := filepath.Join(f.Dir, name)
	fh, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f.add(name, "", "missing: a results folder has %s, %s, %s and %s", ResultsFile, ObservationsFile, ProcessesFile, InputCopyFile)
		case errors.Is(err, syscall.ELOOP):
			// Already reported by scanEntries as a link.
		default:
			f.add(name, "", "cannot open: %v", errors.Unwrap(err))
		}
		return nil, false
	}
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() {
		fh.Close()
		f.add(name, "", "is not a regular file")
		return nil, false
	}
	if st.Size() > max {
		fh.Close()
		f.add(name, "", "is %d bytes, over the cap of %d bytes; refusing to read it", st.Size(), max)
		return nil, false
	}
	return fh, true
}

func (f *Folder) loadResults(lim Limits) {
	fh, ok := f.openRegular(ResultsFile, lim.ResultsBytes)
	if !ok {
		return
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, lim.ResultsBytes+1))
	if err != nil {
		f.add(ResultsFile, "", "cannot read: %v", err)
		return
	}
	if int64(len(b)) > lim.ResultsBytes {
		f.add(ResultsFile, "", "grew over the cap of %d bytes while being read", lim.ResultsBytes)
		return
	}
	f.ResultsRaw = b
	var r Results
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		f.add(ResultsFile, "", "does not decode as results: %v", describe(b, err))
		return
	}
	f.Results = &r
}

// describe adds a line number to a JSON syntax error.
func describe(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Sprintf("line %d: %v", line, se)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// readLines reads a JSONL file line by line. A last line without its
// newline is reported as truncated, since the recorder always ends a line.
func (f *Folder) readLines(name string, lim Limits, each func(n int, raw []byte)) {
	fh, ok := f.openRegular(name, lim.JSONLBytes)
	if !ok {
		return
	}
	defer fh.Close()
	r := bufio.NewReaderSize(io.LimitReader(fh, lim.JSONLBytes+1), 64<<10)
	var total int64
	for n := 1; ; n++ {
		line, err := readLine(r, lim.LineBytes)
		total += int64(len(line))
		if total > lim.JSONLBytes {
			f.add(name, fmt.Sprintf("line %d", n), "file grew over the cap of %d bytes while being read", lim.JSONLBytes)
			return
		}
		if errors.Is(err, errLineTooLong) {
			f.add(name, fmt.Sprintf("line %d", n), "longer than the cap of %d bytes", lim.LineBytes)
			return
		}
		if err != nil && !errors.Is(err, io.EOF) {
			f.add(name, fmt.Sprintf("line %d", n), "cannot read: %v", err)
			return
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return
		}
		if !bytes.HasSuffix(line, []byte("\n")) {
			f.add(name, fmt.Sprintf("line %d", n), "truncated: the file ends without a newline after %d bytes of this line", len(line))
			return
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if len(bytes.TrimSpace(body)) == 0 {
			f.add(name, fmt.Sprintf("line %d", n), "empty line")
			continue
		}
		each(n, body)
	}
}

var errLineTooLong = errors.New("line too long")

func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > max {
			return out, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return out, err
	}
}

func (f *Folder) loadObservations(lim Limits) {
	f.readLines(ObservationsFile, lim, func(n int, raw []byte) {
		var head struct {
			Scenario  *string `json:"scenario"`
			Condition *string `json:"condition"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			f.add(ObservationsFile, fmt.Sprintf("line %d", n), "not a JSON object: %v", describe(raw, err))
			return
		}
		if head.Scenario == nil || head.Condition == nil {
			f.add(ObservationsFile, fmt.Sprintf("line %d", n), "has no scenario or no condition")
			return
		}
		f.Observations = append(f.Observations, Line{N: n, Scenario: *head.Scenario, Condition: *head.Condition, Raw: append(json.RawMessage{}, raw...)})
	})
}

func (f *Folder) loadProcesses(lim Limits) {
	in := interner{}
	f.readLines(ProcessesFile, lim, func(n int, raw []byte) {
		var p ProcessRecord
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			f.add(ProcessesFile, fmt.Sprintf("line %d", n), "not a process record: %v", describe(raw, err))
			return
		}
		in.process(&p)
		f.Processes = append(f.Processes, Process{N: n, ProcessRecord: p})
	})
}

// interner keeps one copy of each string the process lines repeat: the
// executable's hash, the scenario, condition and worker, most command
// line words, and the reports of workers that did the same (at 100,000
// trials, about half of the bytes the decoded lines held).
type interner map[string]string

func (in interner) s(v string) string {
	if c, ok := in[v]; ok {
		return c
	}
	in[v] = v
	return v
}

func (in interner) process(p *ProcessRecord) {
	p.Scenario, p.Condition, p.Worker = in.s(p.Scenario), in.s(p.Condition), in.s(p.Worker)
	p.Signal, p.KilledBy, p.ExecutableSHA256 = in.s(p.Signal), in.s(p.KilledBy), in.s(p.ExecutableSHA256)
	p.Stdout, p.Stderr = in.s(p.Stdout), in.s(p.Stderr)
	for i, a := range p.Argv {
		p.Argv[i] = in.s(a)
	}
}

// loadInput reads the folder's copy of the input file; verify checks its
// hash against the recorded one.
func (f *Folder) loadInput(lim Limits) {
	fh, ok := f.openRegular(InputCopyFile, lim.ResultsBytes)
	if !ok {
		return
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, lim.ResultsBytes+1))
	if err != nil || int64(len(b)) > lim.ResultsBytes {
		f.add(InputCopyFile, "", "cannot read within the cap of %d bytes", lim.ResultsBytes)
		return
	}
	f.Input = b
}

// Records returns the lines of one scenario, in file order. In a merged
// folder each line carries its shard, and Shards their number.
func (f *Folder) Records(scenario string) Records {
	var r Records
	if f.Results != nil {
		r.Shards = f.markShards(f.Results.Shards)
		r.Format = max(f.Results.Format, 1)
	}
	r.Observations = linesOf(f.Observations, scenario, func(l Line) string { return l.Scenario })
	r.Processes = linesOf(f.Processes, scenario, func(p Process) string { return p.Scenario })
	r.index()
	return r
}

// linesOf are the lines of one scenario, in file order. When every line
// is that scenario's, as in a folder of one scenario, they are the
// folder's own (clipped, so an append copies): at 100,000 trials a copy
// is tens of MB.
func linesOf[T any](all []T, scenario string, of func(T) string) []T {
	mine := 0
	for _, x := range all {
		if of(x) == scenario {
			mine++
		}
	}
	switch mine {
	case 0:
		return nil
	case len(all):
		return slices.Clip(all)
	}
	out := make([]T, 0, mine)
	for _, x := range all {
		if of(x) == scenario {
			out = append(out, x)
		}
	}
	return out
}

// markShards gives every line the shard whose block holds it, when the
// blocks cover the files exactly, and returns the number of shards; 0
// when the folder is not merged or its blocks do not fit, which verify
// reports.
func (f *Folder) markShards(shards []ShardRun) int {
	obs, procs := 0, 0
	for _, s := range shards {
		obs += s.Observations
		procs += s.Processes
	}
	if len(shards) == 0 || obs != len(f.Observations) || procs != len(f.Processes) {
		return 0
	}
	o, p := 0, 0
	for _, s := range shards {
		for range s.Observations {
			f.Observations[o].Shard = s.Index
			o++
		}
		for range s.Processes {
			f.Processes[p].Shard = s.Index
			p++
		}
	}
	return len(shards)
}
