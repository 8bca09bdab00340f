package identity

import (
	"context"
	"time"
)

// budget is the time the reverse-DNS checks of one Verify call may take
// together; its context is made on the first cache miss only.
type budget struct {
	parent context.Context
	d      time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	// feedTimer bounds the waits of the call for feeds that never loaded
	// (Config.FeedWait), made at the first wait; feedsOut: it ran out.
	feedTimer *time.Timer
	feedsOut  bool
}

// feedWait returns the channel that closes when the call's wait for
// feeds has run out (a timer of d, made at the first call), or nil once
// it has.
func (b *budget) feedWait(d time.Duration) <-chan time.Time {
	if b.feedsOut {
		return nil
	}
	if b.feedTimer == nil {
		b.feedTimer = time.NewTimer(d)
	}
	return b.feedTimer.C
}

func (b *budget) context() context.Context {
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithTimeout(b.parent, b.d)
	}
	return b.ctx
}

func (b *budget) release() {
	if b.cancel != nil {
		b.cancel()
	}
	if b.feedTimer != nil {
		b.feedTimer.Stop()
	}
}
