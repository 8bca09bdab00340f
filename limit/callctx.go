package limit

import (
	"context"
	"sync/atomic"
	"time"
)

// callCtx is the context of one store call, reused from call to call: the
// values of the request's context, and a deadline, the call's timeout,
// after which Done is closed and Err is context.DeadlineExceeded. go-redis
// bounds dialing, writing and reading by the deadline and its waits by
// Done, so a call ends within the timeout as it would with
// context.WithTimeout, without that function's timer, channel and closures
// on every decision: the timer and channel here are made once per pooled
// callCtx, and a channel again only after a call timed out.
//
// The request's cancellation is not passed on: a call whose client went
// away still ends within the timeout, and the caller tells that case
// apart by the request's context.
type callCtx struct {
	parent   context.Context
	deadline time.Time
	// parentFirst: the parent's deadline came first, so reaching it is
	// the caller's doing, not the store's.
	parentFirst bool
	armed       bool // between start and finish
	timer       *time.Timer
	done        chan struct{}
	expired     atomic.Bool
}

func newCallCtx() *callCtx {
	c := &callCtx{done: make(chan struct{})}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	return c
}

// expire closes done: the deadline passed.
func (c *callCtx) expire() {
	if c.expired.CompareAndSwap(false, true) {
		close(c.done)
	}
}

// start arms c for a call with parent's values that ends by deadline (or
// parent's deadline, if earlier), and returns it as a context.
func (c *callCtx) start(parent context.Context, deadline time.Time) context.Context {
	c.parentFirst = false
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline, c.parentFirst = d, true
	}
	c.parent, c.deadline, c.armed = parent, deadline, true
	c.timer.Reset(time.Until(deadline))
	return c
}

// finish disarms c once its call has returned (again: nothing). When the
// timer fired (or is firing), it waits for done to be closed and makes a
// new channel.
func (c *callCtx) finish() {
	if !c.armed {
		return
	}
	c.armed = false
	if !c.timer.Stop() {
		<-c.done
		c.done = make(chan struct{})
		c.expired.Store(false)
	}
	c.parent = nil
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callCtx) Done() <-chan struct{}       { return c.done }

// Value is the parent's; nil once the call is finished (nothing should
// hold a call's context past it, but a late reader must not panic).
func (c *callCtx) Value(key any) any {
	if p := c.parent; p != nil {
		return p.Value(key)
	}
	return nil
}

// callerEnded reports whether the call's end came from its caller: the
// caller's context is done, or its deadline (earlier than the store's
// timeout) has passed. Such a failure says nothing of the store.
func (c *callCtx) callerEnded(parent context.Context) bool {
	return parent.Err() != nil || c.parentFirst && !time.Now().Before(c.deadline)
}

func (c *callCtx) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}
