package integration_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// pageSession is a headless Chromium that a test drives through chromedp,
// with every request the browser made and every console error, warning or
// exception, for the tests that say a page loads nothing from elsewhere
// and runs clean.
type pageSession struct {
	ctx                context.Context
	mu                 sync.Mutex
	requests, problems []string
}

// openPage starts chrome at width×height for at most bound (chromedp asks
// that the first call's context have no deadline, so a timer cancels the
// browser) and enables the network and log domains; it ends with the test.
func openPage(t *testing.T, chrome string, width, height int, bound time.Duration) *pageSession {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	stop := time.AfterFunc(bound, cancel)
	t.Cleanup(func() { stop.Stop(); cancel(); cancelAlloc() })
	p := &pageSession{ctx: ctx}
	if err := chromedp.Listen(ctx, p.listen); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("log: %v", err)
	}
	return p
}

func (p *pageSession) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, ev.Request.URL)
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			p.problems = append(p.problems, string(ev.Entry.Source)+": "+ev.Entry.Text)
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			p.problems = append(p.problems, "console."+string(ev.Type))
		}
	case *runtime.EventExceptionThrown:
		p.problems = append(p.problems, "exception: "+ev.ExceptionDetails.Text)
	}
}

// seen returns the requests made and the problems logged so far.
func (p *pageSession) seen() (requests, problems []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...), append([]string(nil), p.problems...)
}
