package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
)

// Read judges the log that r holds (gzip-compressed or not), named name
// in the result. Malformed lines are counted and skipped; only a read
// error or ctx's end stops it.
//
// It reads the log in chunks of lines, which Auditor.workers goroutines
// parse at once; a dispatcher takes the parsed chunks in the order they
// were read and hands each shard its clients' entries, which it judges in
// that order. The result is the same whatever the number of cores.
func (a *Auditor) Read(ctx context.Context, r io.Reader, name string) error {
	r, err := decompress(counting{r, &a.bytesRead})
	if err != nil {
		return fmt.Errorf("robots_guard: audit: %s: %w", name, err)
	}
	fr := FileResult{Name: name}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := a.startPipeline(ctx, cancel, &fr)
	err = a.readChunks(ctx, bufio.NewReaderSize(r, 256<<10), &fr, p)
	p.finish()
	a.res.Files = append(a.res.Files, fr)
	if cause := context.Cause(ctx); err == nil && cause != nil && cause != context.Canceled {
		err = cause // the dispatcher's: a file of no format the audit reads
	}
	return err
}

// Chunks: a chunk holds at most chunkLines lines or about chunkBytes
// bytes; pipelineDepth chunks per worker may be read ahead of the judging.
// A shard's queue holds shardQueue batches (a chunk's entries of its
// clients), so that a shard busier than the others for a while does not
// hold the dispatcher back.
const (
	chunkLines    = 1024
	chunkBytes    = 256 << 10
	pipelineDepth = 4
	shardQueue    = 16
)

// chunk is lines of a log, read in turn; a worker parses them.
type chunk struct {
	first  int64   // the number of its first line in its file, less one
	data   []byte  // the lines, each without its "\n"
	ends   []int32 // where each line ends in data; -1: a line too long, dropped
	format string
	done   chan struct{} // closed when out is set
	out    parsed
}

// parsed is what a worker made of a chunk.
type parsed struct {
	// ats are the entries' times, in the order of the lines; byShard
	// the entries, by the shard of their client.
	ats     []int64
	byShard [shards][]Entry
	// The chunk's counts, as FileResult's, and its malformed lines
	// before its first entry.
	blank, skipped, malformed, entries, noUserAgent int64
	malformedFirst                                  int64
	examples                                        []Malformed
	// checks close when the checks of the chunk's claims are done.
	checks []<-chan struct{}
}

// pipeline is a Read's goroutines: the workers that parse chunks, the
// dispatcher that takes them in order, and one goroutine per shard.
type pipeline struct {
	jobs  chan *chunk // to the workers
	order chan *chunk // to the dispatcher, in the order read
	in    [shards]chan []Entry
	wg    sync.WaitGroup // the workers and the shards
	disp  sync.WaitGroup
}

// startPipeline starts the goroutines of a Read that counts into fr;
// the dispatcher ends ctx with cancel when the file is of no format the
// audit reads.
func (a *Auditor) startPipeline(ctx context.Context, cancel context.CancelCauseFunc, fr *FileResult) *pipeline {
	p := &pipeline{jobs: make(chan *chunk, a.workers), order: make(chan *chunk, a.workers*pipelineDepth)}
	for range a.workers {
		p.wg.Go(func() {
			memo := &claimsMemo{v: a.verifier, of: make(map[string]identity.Claims)}
			for c := range p.jobs {
				a.parseChunk(c, memo)
				close(c.done)
			}
		})
	}
	var judges sync.WaitGroup
	for i, s := range a.shards {
		p.in[i] = make(chan []Entry, shardQueue)
		judges.Go(func() {
			for batch := range p.in[i] {
				for j := range batch {
					if ctx.Err() != nil {
						break
					}
					s.judge(ctx, &batch[j])
				}
				clear(batch) // not to keep the chunk's text
				a.batches.Put(&batch)
			}
		})
	}
	p.disp.Go(func() {
		defer judges.Wait()
		defer func() {
			for _, in := range p.in {
				close(in)
			}
		}()
		for c := range p.order {
			<-c.done
			if ctx.Err() != nil {
				continue // drain
			}
			if err := a.dispatch(c, fr, p); err != nil {
				cancel(err)
			}
		}
	})
	return p
}

// finish waits for the pipeline to judge what was read.
func (p *pipeline) finish() {
	close(p.jobs)
	close(p.order)
	p.wg.Wait()
	p.disp.Wait()
}

// send hands c to the workers and the dispatcher.
func (p *pipeline) send(c *chunk) {
	p.order <- c
	p.jobs <- c
}

// readChunks reads br's lines into chunks for p, counting them in fr.
func (a *Auditor) readChunks(ctx context.Context, br *bufio.Reader, fr *FileResult, p *pipeline) error {
	c := a.newChunk(fr)
	for {
		line, err := readLine(br)
		switch {
		case err == errLong:
			fr.Lines++
			c.ends = append(c.ends, -1)
		case len(line) > 0 || err == nil: // a line, not the end after the last one
			fr.Lines++
			if fr.Format == "" {
				fr.Format = formatOf(a.res.Format, bytes.TrimRight(line, "\r"))
			}
			c.data = append(c.data, line...)
			c.ends = append(c.ends, int32(len(c.data)))
		}
		if len(c.ends) == chunkLines || len(c.data) >= chunkBytes || (err != nil && err != errLong) {
			c.format = fr.Format
			a.linesRead.Add(int64(len(c.ends)))
			p.send(c)
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			c = a.newChunk(fr)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && err != errLong {
			return fmt.Errorf("robots_guard: audit: %s line %d: %w", fr.Name, fr.Lines+1, err)
		}
	}
}

// newChunk returns an empty chunk whose first line follows fr's last.
func (a *Auditor) newChunk(fr *FileResult) *chunk {
	c := &chunk{first: fr.Lines, done: make(chan struct{})}
	if b, ok := a.buffers.Get().(*lineBuffer); ok {
		c.data, c.ends = b.data[:0], b.ends[:0]
	} else {
		c.data, c.ends = make([]byte, 0, chunkBytes+4096), make([]int32, 0, chunkLines)
	}
	return c
}

// lineBuffer is a chunk's buffers, kept for the next once it is parsed.
type lineBuffer struct {
	data []byte
	ends []int32
}

// parseChunk parses the lines of c into c.out, and starts the checks of
// their claims (the worker's memo of headers' claims).
func (a *Auditor) parseChunk(c *chunk, memo *claimsMemo) {
	p := parserOf(c.format)
	text := ""
	if p.text != nil {
		text = string(c.data) // one copy, whose substrings the entries keep
	}
	out := &c.out
	out.ats = make([]int64, 0, len(c.ends))
	v4, v6 := a.cfg.Clients.IPv4Prefix, a.cfg.Clients.IPv6Prefix
	start := 0
	for i, end := range c.ends {
		n := c.first + int64(i) + 1
		if end < 0 {
			out.malformedLine(n, "", errLong)
			continue
		}
		line, s := bytes.TrimRight(c.data[start:end], "\r"), ""
		if text != "" {
			s = text[start : start+len(line)]
		}
		start = int(end)
		if len(bytes.TrimSpace(line)) == 0 {
			out.blank++
			continue
		}
		en, err := a.parse(p, line, s)
		switch {
		case errors.Is(err, errSkip):
			out.skipped++
			continue
		case err != nil:
			out.malformedLine(n, truncate(string(line), 200), err)
			continue
		}
		out.entries++
		if en.UserAgent == "" {
			out.noUserAgent++
		} else if a.prefetch != nil {
			if cl := memo.claims(en.UserAgent); cl != 0 {
				if addr := limit.ParseAddr(en.ClientIP); addr.IsValid() {
					if done := a.prefetch.check(addr, cl); done != nil {
						out.checks = append(out.checks, done)
					}
				}
			}
		}
		out.ats = append(out.ats, en.At)
		k := shardOf(en.ClientIP, v4, v6)
		if out.byShard[k] == nil {
			if b, ok := a.batches.Get().(*[]Entry); ok {
				out.byShard[k] = (*b)[:0]
			} else {
				out.byShard[k] = make([]Entry, 0, chunkLines/shards*2)
			}
		}
		out.byShard[k] = append(out.byShard[k], en)
	}
	// The entries keep text, or strings of their own: the bytes are free.
	a.buffers.Put(&lineBuffer{c.data, c.ends})
	c.data, c.ends = nil, nil
}

// malformedLine counts the malformed line n, whose text is text.
func (out *parsed) malformedLine(n int64, text string, err error) {
	out.malformed++
	if out.entries == 0 {
		out.malformedFirst++
	}
	if len(out.examples) < maxMalformedShown {
		out.examples = append(out.examples, Malformed{Line: n, Text: text, Reason: err.Error()})
	}
}

// dispatch counts a parsed chunk, the next in order, into fr and the
// result, and hands its entries to the shards once its claims are
// checked.
func (a *Auditor) dispatch(c *chunk, fr *FileResult, p *pipeline) error {
	out := &c.out
	if fr.Entries == 0 && fr.Malformed+out.malformedFirst >= unknownAfter {
		ex := fr.Examples
		if len(ex) == 0 {
			ex = out.examples
		}
		return fmt.Errorf("robots_guard: audit: %s: the first %d lines are none of the formats the audit reads "+
			"(Caddy's, Traefik's and Cloudflare Logpush's JSON; HAProxy's httplog; Envoy's default format; CloudFront's and ALB's logs; the Common or Combined Log Format of nginx and Apache, with nginx's log_format fields after them or Apache's virtual host first): %s",
			fr.Name, fr.Malformed+out.malformedFirst, ex[0].Reason)
	}
	fr.Blank += out.blank
	fr.Skipped += out.skipped
	fr.Malformed += out.malformed
	fr.Entries += out.entries
	fr.NoUserAgent += out.noUserAgent
	for _, m := range out.examples {
		if len(fr.Examples) < maxMalformedShown {
			fr.Examples = append(fr.Examples, m)
		}
	}
	for _, at := range out.ats {
		if a.res.From.IsZero() || at < a.res.From.UnixNano() {
			a.res.From = time.Unix(0, at).UTC()
		}
		if a.res.To.IsZero() || at > a.res.To.UnixNano() {
			a.res.To = time.Unix(0, at).UTC()
		} else if at < a.res.To.UnixNano()-int64(time.Minute) {
			a.res.OutOfOrder++
		}
	}
	for _, done := range out.checks {
		<-done // the engines find the answer in the verifier's cache
	}
	for i, batch := range out.byShard {
		if len(batch) > 0 {
			p.in[i] <- batch
		}
	}
	return nil
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
