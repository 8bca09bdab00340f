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
	queries atomic.Int64
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{ptr: map[string][]string{}, addrs: map[string][]netip.Addr{}}
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
	s.Addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(s.serve)
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: ln, Handler: h}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() {
		udp.Shutdown()
		tcp.Shutdown()
	})
	return s
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

// Queries returns the number of queries answered or dropped so far.
func (s *Server) Queries() int64 { return s.queries.Load() }

func (s *Server) serve(w dns.ResponseWriter, q *dns.Msg) {
	s.queries.Add(1)
	s.mu.Lock()
	delay := s.delay
	s.mu.Unlock()
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
