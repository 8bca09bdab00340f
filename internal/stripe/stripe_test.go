package stripe

import (
	"sync"
	"testing"
)

// Numbers stay in range, from one goroutine or many at once.
func TestSet(t *testing.T) {
	s := New(4)
	if s.Len() != 4 || New(0).Len() != 1 {
		t.Fatalf("Len %d, %d", s.Len(), New(0).Len())
	}
	first := s.Get()
	n := *first
	s.Put(first)
	if again := s.Get(); *again != n {
		t.Logf("the pool dropped the token (race detector or a collection): %d then %d", n, *again)
	} else {
		s.Put(again)
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				i := s.Get()
				if *i < 0 || *i >= 4 {
					t.Errorf("stripe %d out of range", *i)
				}
				mu.Lock()
				seen[*i] = true
				mu.Unlock()
				s.Put(i)
			}
		})
	}
	wg.Wait()
	if len(seen) == 0 {
		t.Fatal("no stripe dealt")
	}
}
