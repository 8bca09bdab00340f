package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync/atomic"
)

// maxLine is the longest line read; a longer one is malformed (and
// skipped to its end), so one bad line cannot take the memory.
const maxLine = 1 << 20

// ReadFiles judges the logs at paths ("-" is standard input), the
// oldest first: files are ordered by the time of their first entry, so
// that rotations (access.log.2.gz, access.log.1, access.log) may be given
// in any order and each client's Crawl-delay clock runs forward. A file
// that cannot be opened is an error; its lines are not judged.
func (a *Auditor) ReadFiles(ctx context.Context, paths []string) error {
	type file struct {
		path  string
		first int64
	}
	files := make([]file, 0, len(paths))
	for _, p := range paths {
		f := file{path: p}
		if fi, err := os.Stat(p); p != "-" && err == nil && fi.Mode().IsRegular() {
			// Only a regular file is read twice: a pipe's bytes would be
			// gone. Pipes keep their place, at time 0.
			at, err := a.firstTime(p)
			if err != nil {
				return err
			}
			f.first = at
		}
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].first < files[j].first })
	for _, f := range files {
		if err := a.readPath(ctx, f.path); err != nil {
			return err
		}
	}
	return nil
}

// readPath judges one file, or standard input for "-".
func (a *Auditor) readPath(ctx context.Context, path string) error {
	if path == "-" {
		return a.Read(ctx, os.Stdin, "(standard input)")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("robots_guard: audit: %w", err)
	}
	defer f.Close()
	return a.Read(ctx, f, path)
}

// Progress returns how many bytes of the logs (as stored: compressed
// ones compressed) and lines have been read so far; it may be called from
// another goroutine while the Auditor reads, for a progress display.
func (a *Auditor) Progress() (bytes, lines int64) {
	return a.bytesRead.Load(), a.linesRead.Load()
}

// counting counts the bytes read through it into n.
type counting struct {
	r io.Reader
	n *atomic.Int64
}

func (c counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// firstTime returns the time of the first entry of the file at path, 0
// when it has none.
func (a *Auditor) firstTime(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("robots_guard: audit: %w", err)
	}
	defer f.Close()
	r, err := decompress(f)
	if err != nil {
		return 0, fmt.Errorf("robots_guard: audit: %s: %w", path, err)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for range 1000 {
		line, err := br.ReadSlice('\n')
		line = bytes.TrimRight(line, "\r\n")
		if en, perr := a.parse(parserOf(formatOf(a.res.Format, line)), line, string(line)); perr == nil {
			return en.At, nil
		}
		if err != nil {
			break
		}
	}
	return 0, nil
}

// decompress returns r, gunzipped when it starts like a gzip stream.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}

// formatOf returns the format of a file whose first line is line.
func formatOf(want string, line []byte) string {
	if want != "" && want != FormatAuto {
		return want
	}
	if t := bytes.TrimLeft(line, " \t"); len(t) > 0 && t[0] == '{' {
		return jsonFormat(t)
	}
	if isCloudFront(string(line)) {
		return FormatCloudFront
	}
	if isALB(string(line)) {
		return FormatALB
	}
	if isEnvoy(string(line)) {
		return FormatEnvoy
	}
	if acceptDate(string(line)) >= 0 {
		return FormatHAProxy
	}
	if isVhost(line) {
		return FormatVhostCombined
	}
	return FormatCombined
}

// lineParser reads a line of one format: from its bytes (the JSON
// formats) or from its text (the others, whose Entry keeps substrings of
// it).
type lineParser struct {
	bytes func([]byte) (Entry, error)
	text  func(string) (Entry, error)
}

// parsers are the line parsers of the formats.
var parsers = map[string]lineParser{
	FormatCaddy:         {bytes: parseCaddy},
	FormatTraefik:       {bytes: parseTraefik},
	FormatCloudflare:    {bytes: parseCloudflare},
	FormatCombined:      {text: parseCombined},
	FormatVhostCombined: {text: parseVhost},
	FormatHAProxy:       {text: parseHAProxy},
	FormatEnvoy:         {text: parseEnvoy},
	FormatCloudFront:    {text: parseCloudFront},
	FormatALB:           {text: parseALB},
}

// parserOf returns the line parser of format (the Combined format's for
// one it does not know).
func parserOf(format string) lineParser {
	if p, ok := parsers[format]; ok {
		return p
	}
	return parsers[FormatCombined]
}

// parse reads one line with p (line and text are the same bytes: p reads
// the one or the other): a request made before a day after the Auditor
// started.
func (a *Auditor) parse(p lineParser, line []byte, text string) (en Entry, err error) {
	if p.bytes != nil {
		en, err = p.bytes(line)
	} else {
		en, err = p.text(text)
	}
	if err == nil && en.At > a.notAfter {
		return en, errTime
	}
	return en, err
}
