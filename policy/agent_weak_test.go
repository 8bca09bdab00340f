package policy_test

import (
	"runtime"
	"testing"
	"weak"

	"github.com/robotsguard/robotsguard/policy"
)

func TestWeakAgent(t *testing.T) {
	r := policy.Parse([]byte("User-agent: FooBot\nDisallow: /x\n"))
	other := policy.Parse([]byte("User-agent: FooBot\nDisallow: /x\n"))
	w := r.Agent("FooBot/1.0").Weak()
	a, ok := w.For(r)
	if !ok || a.Group() != "FooBot" || a.Decide("/x").Allowed {
		t.Fatalf("For(r) = %v %v", a.Group(), ok)
	}
	if _, ok := w.For(other); ok {
		t.Fatal("For(another file) succeeded")
	}
	if _, ok := w.For(nil); ok {
		t.Fatal("For(nil) succeeded")
	}
	// A Robots that Parse did not make has no number, and matches nothing,
	// not even a zero WeakAgent.
	if _, ok := (policy.WeakAgent{}).For(&policy.Robots{}); ok {
		t.Fatal("a zero WeakAgent matched a zero Robots")
	}
	// A WeakAgent does not keep its Robots alive.
	w2, wr := weakOfFresh()
	runtime.GC()
	runtime.GC()
	if wr.Value() != nil {
		t.Fatal("a WeakAgent kept its Robots alive")
	}
	if _, ok := w2.For(r); ok {
		t.Fatal("For(another file) succeeded after its own file was collected")
	}
}

func weakOfFresh() (policy.WeakAgent, weak.Pointer[policy.Robots]) {
	r := policy.Parse([]byte("User-agent: FooBot\nDisallow: /y\n"))
	return r.Agent("FooBot").Weak(), weak.Make(r)
}
