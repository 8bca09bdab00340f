package logsample

import (
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The per-P log sampler lets through, per tick and message, each block's
// share of the first lines and then one in logSampleThereafter, and
// starts again at the next tick; other messages count apart.
func TestPSampler(t *testing.T) {
	for n, want := range map[int]uint64{1: 10, 2: 5, 4: 3, 16: 1} {
		if s := newBlocks(zapcore.NewNopCore(), time.Second, 10, 100, n); s.first != want {
			t.Errorf("%d blocks: the first %d lines each, want %d", n, s.first, want)
		}
	}
	core, logs := observer.New(zapcore.InfoLevel)
	s := newBlocks(core, time.Second, 10, 100, 1)
	first := int(s.first)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(msg string, n int, at time.Time) {
		for range n {
			if ce := s.Check(zapcore.Entry{Level: zapcore.InfoLevel, Message: msg, Time: at}, nil); ce != nil {
				ce.Write()
			}
		}
	}
	write("robots_guard: denied", 1000, at)
	write("robots_guard: throttled", 5, at)
	write("robots_guard: denied", 1000, at.Add(time.Second))
	denied := logs.FilterMessage("robots_guard: denied").Len()
	if want := 2 * (first + (1000-first)/100); denied != want {
		t.Errorf("%d denial lines over two ticks, want %d", denied, want)
	}
	if n := logs.FilterMessage("robots_guard: throttled").Len(); n != min(5, first+(5-first)/100) {
		t.Errorf("%d throttle lines of 5", n)
	}
	if s.With(nil).(*Sampler).sampleBlocks != s.sampleBlocks {
		t.Error("With does not share the counters")
	}
}
