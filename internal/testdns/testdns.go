// Package testdns runs a real DNS server on a loopback port for tests of
// reverse-DNS verification: it answers PTR, A and AAAA queries from a zone
// the test writes, counts queries, and can be slowed down to test timeouts.
package testdns

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Server is a DNS server on 127.0.0.1 (UDP and TCP on the same port).
type Server struct {
	// Addr is the server's host:port, for a resolver setting.
	Addr string

	mu      sync.Mutex
	ptr     map[string][]string     // reverse name -> targets
	addrs   map[string][]netip.Addr // name -> A/AAAA
	delay   time.Duration
	drop    []netip.Prefix // PTR queries of these addresses go unanswered
	queries atomic.Int64
	dropped atomic.Int64
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{ptr: map[string][]string{}, addrs: map[string][]netip.Addr{}}
	s.Addr = Serve(t, dns.HandlerFunc(s.serve))
	return s
}

// Serve starts a DNS server on 127.0.0.1 (UDP and TCP on the same port)
// whose answers h writes, for tests of odd answers (a truncated one, a
// forged one, a failure code); it stops when the test ends. It returns
// the server's host:port.
func Serve(t testing.TB, h dns.Handler) string {
	t.Helper()
	// The UDP port is free, the same TCP port may not be (another test's
	// connection): a few tries at other ports.
	var pc net.PacketConn
	var ln net.Listener
	var err error
	for range 20 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatalf("testdns: %v", err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatalf("testdns: no port free for both UDP and TCP: %v", err)
	}
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: ln, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() {
		udp.Shutdown()
		tcp.Shutdown()
	})
	return pc.LocalAddr().String()
}

// PTR makes the reverse lookup of addr answer names (fully qualified or
// not).
func (s *Server) PTR(addr string, names ...string) {
	rev, err := dns.ReverseAddr(addr)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ptr[strings.ToLower(rev)] = names
}

// Host makes name resolve to addrs (A and AAAA records by family).
func (s *Server) Host(name string, addrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range addrs {
		s.addrs[dns.Fqdn(strings.ToLower(name))] = append(s.addrs[dns.Fqdn(strings.ToLower(name))], netip.MustParseAddr(a))
	}
}

// SetDelay makes every answer wait d (a resolver that times out).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Drop makes the reverse lookups of the addresses in p go unanswered (a
// reverse zone whose servers are silent, which its owner can arrange).
func (s *Server) Drop(p netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop = append(s.drop, p.Masked())
}

// Dropped returns the number of queries dropped (see Drop).
func (s *Server) Dropped() int64 { return s.dropped.Load() }

// Queries returns the number of queries answered or dropped so far.
func (s *Server) Queries() int64 { return s.queries.Load() }

func (s *Server) serve(w dns.ResponseWriter, q *dns.Msg) {
	s.queries.Add(1)
	s.mu.Lock()
	delay, drop := s.delay, s.drop
	s.mu.Unlock()
	for _, qq := range q.Question {
		if qq.Qtype != dns.TypePTR || len(drop) == 0 {
			continue
		}
		if a, ok := reverseAddr(qq.Name); ok {
			for _, p := range drop {
				if p.Contains(a) {
					s.dropped.Add(1)
					return // no answer: the client times out
				}
			}
		}
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	found := false
	s.mu.Lock()
	for _, qq := range q.Question {
		name := strings.ToLower(qq.Name)
		hdr := dns.RR_Header{Name: qq.Name, Class: dns.ClassINET, Ttl: 60}
		switch qq.Qtype {
		case dns.TypePTR:
			if targets, ok := s.ptr[name]; ok {
				found = true
				for _, t := range targets {
					h := hdr
					h.Rrtype = dns.TypePTR
					m.Answer = append(m.Answer, &dns.PTR{Hdr: h, Ptr: dns.Fqdn(t)})
				}
			}
		case dns.TypeA, dns.TypeAAAA:
			if as, ok := s.addrs[name]; ok {
				found = true
				for _, a := range as {
					h := hdr
					if a.Is4() && qq.Qtype == dns.TypeA {
						h.Rrtype = dns.TypeA
						m.Answer = append(m.Answer, &dns.A{Hdr: h, A: a.AsSlice()})
					} else if a.Is6() && qq.Qtype == dns.TypeAAAA {
						h.Rrtype = dns.TypeAAAA
						m.Answer = append(m.Answer, &dns.AAAA{Hdr: h, AAAA: a.AsSlice()})
					}
				}
			} else if _, ok := s.ptr[name]; ok {
				found = true
			}
		}
	}
	s.mu.Unlock()
	if !found {
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}

// reverseAddr parses an in-addr.arpa or ip6.arpa name.
func reverseAddr(name string) (netip.Addr, bool) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	switch {
	case strings.HasSuffix(name, ".in-addr.arpa"):
		l := strings.Split(strings.TrimSuffix(name, ".in-addr.arpa"), ".")
		if len(l) != 4 {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(l[3] + "." + l[2] + "." + l[1] + "." + l[0])
		return a, err == nil
	case strings.HasSuffix(name, ".ip6.arpa"):
		l := strings.Split(strings.TrimSuffix(name, ".ip6.arpa"), ".")
		if len(l) != 32 {
			return netip.Addr{}, false
		}
		var b strings.Builder
		for i := 31; i >= 0; i-- {
			b.WriteString(l[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		a, err := netip.ParseAddr(b.String())
		return a, err == nil
	}
	return netip.Addr{}, false
}
