package report

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// reportBatchSize is how many distinct records a batch holds before it is
// added to the report: the denied path takes a shared lock at most once
// per this many requests of one P, and a client that comes back (in the
// same five-minute slice) is counted in the batch, not again.
const reportBatchSize = 32

// reportBatch is a batch of records, held by one P at a time while the
// Recorder has no more batches than its bound (it lives in the Recorder's
// sync.Pool, which is per P), so that the denied path writes only memory
// its own P uses. Its lock is uncontended but for drain (every Report)
// and batches shared past the bound.
type reportBatch struct {
	mu   sync.Mutex
	n    int
	recs [reportBatchSize]reportRecord
	// index finds a record by its client, in a few probes; a slot holds
	// a record's index + 1, 0 when free.
	index [4 * reportBatchSize]uint8
	// refs counts the live refs that hold the batch; guarded by
	// Recorder.mu, and last, away from the fields every record writes.
	refs int
}

// reportBatchRef is what the pool holds. A ref the pool drops (after two
// garbage collections without use) returns its batch to the idle list for
// reuse (see Recorder.release), records and all: every batch stays
// reachable from the Recorder, which drains them all before each Report,
// so no record is lost. Records wait in a batch until it fills or the next
// Report.
type reportBatchRef struct{ b *reportBatch }

// release is the cleanup of a ref: its batch goes to the idle list once
// no ref holds it. It takes only the Recorder's lock, briefly.
func (r *Recorder) release(b *reportBatch) {
	r.mu.Lock()
	if b.refs--; b.refs == 0 {
		r.idle = append(r.idle, b)
	}
	r.mu.Unlock()
}

// add counts rec in b: once more in an equal record of its five-minute
// slice that b holds, or in a new one; a full batch is added to the
// report first.
func (r *Recorder) add(b *reportBatch, rec reportRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec.n = 1
	h := (clientHash(&rec.key.client) ^ uint64(rec.kind)) * 0x9e3779b97f4a7c15
	slot, free := int(h>>57)&(len(b.index)-1), -1
	for range 4 { // linear probing; slots are freed only all at once
		i := int(b.index[slot]) - 1
		if i < 0 {
			free = slot
			break
		}
		if b.recs[i].sameRun(&rec) {
			b.recs[i].n++
			b.recs[i].ua = rec.ua // the latest header of the run
			return
		}
		slot = (slot + 1) & (len(b.index) - 1)
	}
	if b.n == len(b.recs) {
		recs := b.recs[:b.n]
		b.n = 0 // first: a panic below loses the records, never counts them twice
		clear(b.index[:])
		r.flush(recs)
		clear(recs) // drop the references
		free = int(h>>57) & (len(b.index) - 1)
	}
	b.recs[b.n] = rec
	b.n++
	if free >= 0 {
		b.index[free] = uint8(b.n)
	}
}

// flush adds records to the report. Records of one client follow one
// another: a run of equal records (in one five-minute slice) is added once
// with its count, and a shard's lock is taken once per change of shard.
func (r *Recorder) flush(recs []reportRecord) {
	var sh *reportShard
	defer func() {
		if sh != nil {
			sh.mu.Unlock()
		}
	}()
	for i := 0; i < len(recs); {
		rec := &recs[i]
		n, count := 1, rec.n
		for i+n < len(recs) && recs[i+n].sameRun(rec) {
			count += recs[i+n].n
			rec.ua = recs[i+n].ua // the run's latest header
			n++
		}
		if next := r.shard(rec); next != sh {
			if sh != nil {
				sh.mu.Unlock()
			}
			sh = next
			sh.mu.Lock()
		}
		sh.add(rec, count)
		i += n
	}
}

// sameRun reports whether o counts the same as rec, in the same
// five-minute slice.
func (o *reportRecord) sameRun(rec *reportRecord) bool {
	const slice = int64(5 * time.Minute)
	return o.kind == rec.kind && o.rule == rec.rule && o.key == rec.key && o.site == rec.site &&
		o.at-o.at%slice == rec.at-rec.at%slice
}

// drain adds the records waiting in every batch to the report, oldest
// first (so that a late record is not pushed out of its five-minute
// bucket by a newer batch's), so that report sees every record.
func (r *Recorder) drain() {
	r.mu.Lock()
	bs := slices.Clone(r.batches)
	r.mu.Unlock()
	var recs []reportRecord
	for _, b := range bs {
		b.mu.Lock()
		recs = append(recs, b.recs[:b.n]...)
		clear(b.recs[:b.n])
		clear(b.index[:])
		b.n = 0
		b.mu.Unlock()
	}
	slices.SortStableFunc(recs, func(a, b reportRecord) int { return cmp.Compare(a.at, b.at) })
	r.flush(recs)
}
