package caddymodule

import (
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// swapCore is a zapcore.Core whose destination can be replaced. The
// Engine outlives config reloads (see pool) but each config has its own
// logging, so every Provision points the shared Engine's logger at the
// new config's core.
type swapCore struct {
	cur    atomic.Pointer[zapcore.Core]
	fields []zapcore.Field
	parent *swapCore // the root, which holds cur; nil for the root itself
}

func newSwapCore() *swapCore {
	c := &swapCore{}
	nop := zapcore.NewNopCore()
	c.cur.Store(&nop)
	return c
}

// set makes core the destination of c and of every core derived from it.
func (c *swapCore) set(core zapcore.Core) { c.cur.Store(&core) }

// core returns the current destination with c's fields added.
func (c *swapCore) core() zapcore.Core {
	root := c
	if c.parent != nil {
		root = c.parent
	}
	core := *root.cur.Load()
	if len(c.fields) > 0 {
		core = core.With(c.fields)
	}
	return core
}

func (c *swapCore) Enabled(l zapcore.Level) bool { return c.core().Enabled(l) }

func (c *swapCore) With(fields []zapcore.Field) zapcore.Core {
	root := c
	if c.parent != nil {
		root = c.parent
	}
	return &swapCore{parent: root, fields: append(append([]zapcore.Field(nil), c.fields...), fields...)}
}

func (c *swapCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return c.core().Check(e, ce)
}

func (c *swapCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return c.core().Write(e, fields)
}

func (c *swapCore) Sync() error { return c.core().Sync() }
