package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync/atomic"
	"time"
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
		if en, perr := a.parse(bytes.TrimRight(line, "\r\n"), formatOf(a.res.Format, line)); perr == nil {
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

// parse reads one line in format: a request made before a day after the
// Auditor started.
func (a *Auditor) parse(line []byte, format string) (en Entry, err error) {
	switch format {
	case FormatCaddy:
		en, err = parseCaddy(line)
	case FormatTraefik:
		en, err = parseTraefik(line)
	case FormatCloudflare:
		en, err = parseCloudflare(line)
	case FormatVhostCombined:
		en, err = parseVhost(string(line))
	case FormatHAProxy:
		en, err = parseHAProxy(string(line))
	case FormatEnvoy:
		en, err = parseEnvoy(string(line))
	case FormatCloudFront:
		en, err = parseCloudFront(string(line))
	case FormatALB:
		en, err = parseALB(string(line))
	default:
		en, err = parseCombined(string(line))
	}
	if err == nil && en.At > a.notAfter {
		return en, errTime
	}
	return en, err
}

// Read judges the log that r holds (gzip-compressed or not), named name
// in the result. Malformed lines are counted and skipped; only a read
// error or ctx's end stops it.
func (a *Auditor) Read(ctx context.Context, r io.Reader, name string) error {
	r, err := decompress(counting{r, &a.bytesRead})
	if err != nil {
		return fmt.Errorf("robots_guard: audit: %s: %w", name, err)
	}
	br := bufio.NewReaderSize(r, 256<<10)
	fr := FileResult{Name: name}
	defer func() {
		a.linesRead.Add(fr.Lines & 0xfff) // Progress's count of the last lines
		a.res.Files = append(a.res.Files, fr)
	}()
	for {
		line, err := readLine(br)
		if err == errLong {
			fr.Lines++
			fr.Malformed++
			if len(fr.Examples) < maxMalformedShown {
				fr.Examples = append(fr.Examples, Malformed{Line: fr.Lines, Reason: err.Error()})
			}
			continue
		}
		if len(line) > 0 || err == nil { // a line, not the end after the last one
			line = bytes.TrimRight(line, "\r")
			fr.Lines++
			if fr.Format == "" {
				fr.Format = formatOf(a.res.Format, line)
			}
			a.entry(ctx, &fr, line)
			if fr.Entries == 0 && fr.Malformed >= unknownAfter {
				return fmt.Errorf("robots_guard: audit: %s: the first %d lines are none of the formats the audit reads "+
					"(Caddy's, Traefik's and Cloudflare Logpush's JSON; HAProxy's httplog; Envoy's default format; CloudFront's and ALB's logs; the Common or Combined Log Format of nginx and Apache, with nginx's log_format fields after them or Apache's virtual host first): %s",
					name, fr.Malformed, fr.Examples[0].Reason)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("robots_guard: audit: %s line %d: %w", name, fr.Lines+1, err)
		}
		if fr.Lines&0xfff == 0 {
			a.linesRead.Add(0x1000)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
}

// unknownAfter is how many malformed lines, with no line read before
// them, make a file one of an unknown format.
const unknownAfter = 100

// errLong is the reason of a line longer than maxLine.
var errLong = errors.New("line longer than 1 MiB")

// readLine returns the next line without its "\n", errLong for a line
// longer than maxLine (which is skipped).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			if len(buf) <= maxLine {
				buf = append(buf, line...)
			}
		}
		if len(buf) > maxLine {
			return nil, errLongOr(err)
		}
		line = buf
	}
	return bytes.TrimSuffix(line, []byte{'\n'}), err
}

// errLongOr is errLong unless the read ended with another error.
func errLongOr(err error) error {
	if err != nil && err != io.EOF {
		return err
	}
	return errLong
}

// entry reads and judges one line of a file.
func (a *Auditor) entry(ctx context.Context, fr *FileResult, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		fr.Blank++
		return
	}
	en, err := a.parse(line, fr.Format)
	switch {
	case errors.Is(err, errSkip):
		fr.Skipped++
		return
	case err != nil:
		fr.Malformed++
		if len(fr.Examples) < maxMalformedShown {
			fr.Examples = append(fr.Examples, Malformed{Line: fr.Lines, Text: truncate(string(line), 200), Reason: err.Error()})
		}
		return
	}
	fr.Entries++
	if en.UserAgent == "" {
		fr.NoUserAgent++
	}
	if a.res.From.IsZero() || en.At < a.res.From.UnixNano() {
		a.res.From = time.Unix(0, en.At).UTC()
	}
	if a.res.To.IsZero() || en.At > a.res.To.UnixNano() {
		a.res.To = time.Unix(0, en.At).UTC()
	} else if en.At < a.res.To.UnixNano()-int64(time.Minute) {
		a.res.OutOfOrder++
	}
	a.judge(ctx, &en)
}
