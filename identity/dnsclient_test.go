package identity

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/robotsguard/robotsguard/internal/testdns"
)

// oddServer answers each question by the name asked, as the cases of
// TestDNSClient need: over UDP truncated (tc.), with a failure code,
// forged first, late, with names that are not domain names.
func oddServer(t *testing.T) (addr string, tcpQueries *atomic.Int64) {
	tcpQueries = new(atomic.Int64)
	ptr := func(q dns.Question, target string) dns.RR {
		return &dns.PTR{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60}, Ptr: target}
	}
	rev := func(a string) string { r, _ := dns.ReverseAddr(a); return r }
	addr = testdns.Serve(t, dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		q := req.Question[0]
		m := new(dns.Msg)
		m.SetReply(req)
		_, overTCP := w.RemoteAddr().(*net.TCPAddr)
		if overTCP {
			tcpQueries.Add(1)
		}
		switch q.Name {
		case rev("10.0.0.1"): // two names
			m.Answer = []dns.RR{ptr(q, "a.crawler.example."), ptr(q, "b.crawler.example.")}
		case rev("10.0.0.2"): // NXDOMAIN
			m.Rcode = dns.RcodeNameError
		case rev("10.0.0.3"): // no record of the type asked
			m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"x"}}}
		case rev("10.0.0.4"):
			m.Rcode = dns.RcodeServerFailure
		case rev("10.0.0.5"): // a label with a dot in it
			m.Answer = []dns.RR{ptr(q, `evil\.crawler.example.`), ptr(q, "good.crawler.example.")}
		case rev("10.0.0.6"): // a name with a space, and a good one
			m.Answer = []dns.RR{ptr(q, `sp\032ace.crawler.example.`), ptr(q, "good.crawler.example.")}
		case rev("10.0.0.11"): // only names that are not domain names
			m.Answer = []dns.RR{ptr(q, `sp\032ace.crawler.example.`), ptr(q, `a\@b.crawler.example.`)}
		case rev("10.0.0.7"): // forged answers first: another ID, another question
			forged := m.Copy()
			forged.Id++
			forged.Answer = []dns.RR{ptr(q, "forged.example.")}
			w.WriteMsg(forged)
			other := new(dns.Msg)
			other.SetReply(req)
			other.Question[0].Name = rev("10.0.0.1")
			other.Answer = []dns.RR{ptr(other.Question[0], "other.example.")}
			w.WriteMsg(other)
			m.Answer = []dns.RR{ptr(q, "real.crawler.example.")}
		case rev("10.0.0.8"): // truncated over UDP, whole over TCP
			if overTCP {
				m.Answer = []dns.RR{ptr(q, "long.crawler.example.")}
			} else {
				m.Truncated = true
			}
		case rev("10.0.0.9"): // late: after the asker's deadline
			time.Sleep(300 * time.Millisecond)
			m.Answer = []dns.RR{ptr(q, "late.crawler.example.")}
		case rev("10.0.0.10"): // silent
			return
		case rev("10.0.0.21"): // answered, then a forged answer to another question
			m.Authoritative = true // no such record
			w.WriteMsg(m)
			forged := new(dns.Msg)
			forged.SetQuestion(rev("10.0.0.1"), dns.TypePTR)
			forged.Response = true
			forged.Answer = []dns.RR{ptr(forged.Question[0], "forged.example.")}
			w.WriteMsg(forged)
			return
		case rev("10.0.0.13"): // a lame referral: no record, not authoritative, no recursion
		case rev("10.0.0.14"): // no record, authoritative
			m.Authoritative = true
		case rev("10.0.0.15"):
			m.Rcode = dns.RcodeRefused
		case rev("10.0.0.16"): // BADVERS, in the EDNS0 record's upper bits
			m.SetEdns0(1232, false)
			m.IsEdns0().SetExtendedRcode(dns.RcodeBadVers)
			m.Rcode = dns.RcodeBadVers
		case rev("10.0.0.17"): // an address for a name, and a good one
			m.Answer = []dns.RR{ptr(q, "1.2.3.4."), ptr(q, "good.crawler.example.")}
		case rev("10.0.0.18"): // a label that begins with '-'
			m.Answer = []dns.RR{ptr(q, "-bad.crawler.example.")}
		case rev("10.0.0.19"): // a label that ends with '-', and a good one
			m.Answer = []dns.RR{ptr(q, "bad-.crawler.example."), ptr(q, "good.crawler.example.")}

		case "host.crawler.example.": // a CNAME before the addresses
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET}, Target: "real.crawler.example."})
			h := dns.RR_Header{Name: "real.crawler.example.", Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 60}
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: h, A: net.ParseIP("10.0.0.1")})
			} else {
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: h, AAAA: net.ParseIP("2001:db8::1")})
			}
		default:
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	}))
	return addr, tcpQueries
}

// readPTR asks r for the PTR records of addr and says what it read:
// "names" and the names, "not found", or "failure" (with why, if detail).
func readPTR(r resolver, addr string, timeout time.Duration, detail bool) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	names, err := r.ptr(ctx, netip.MustParseAddr(addr))
	var de *net.DNSError
	switch {
	case len(names) > 0: // Go's resolver gives the names it kept with an error for the others
		return "names " + strings.Join(names, " ")
	case errors.As(err, &de) && de.IsNotFound:
		return "not found"
	case err != nil && detail && errors.As(err, &de):
		return "failure: " + de.Err
	case err != nil:
		return "failure"
	}
	return "nothing"
}

// TestDNSClient: what the client reads of each answer of oddServer (as Go's
// resolver reads it: a label with a dot makes an answer unreadable, a name
// with other bytes than a host name's is dropped).
func TestDNSClient(t *testing.T) {
	addr, tcpQueries := oddServer(t)
	r := newResolver(addr)
	defer r.close()
	const want = `
10.0.0.1  names a.crawler.example. b.crawler.example.
10.0.0.2  not found
10.0.0.4  failure: server answered RCodeServerFailure
10.0.0.3  not found
10.0.0.5  failure: unreadable answer: invalid dns name
10.0.0.6  names good.crawler.example.
10.0.0.11 failure: PTR records that are not domain names
10.0.0.7  names real.crawler.example.
10.0.0.10 failure: i/o timeout
10.0.0.8  names long.crawler.example.
10.0.0.13 failure: lame referral
10.0.0.14 not found
10.0.0.15 failure: server answered RCodeRefused
10.0.0.17 names good.crawler.example.
10.0.0.16 failure: server answered 16
10.0.0.19 names good.crawler.example.
10.0.0.18 failure: PTR records that are not domain names
`
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		a, outcome, _ := strings.Cut(line, " ")
		if got := readPTR(r, a, 200*time.Millisecond, true); got != strings.TrimSpace(outcome) {
			t.Errorf("%s: read %q, want %q", a, got, strings.TrimSpace(outcome))
		}
	}
	// A cancelled lookup ends at once, not at its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := r.ptr(ctx, netip.MustParseAddr("10.0.0.10")); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("a cancelled lookup: %v after %s", err, time.Since(start))
	}
	if n := tcpQueries.Load(); n != 1 {
		t.Errorf("%d queries over TCP, want 1 (the truncated answer's)", n)
	}
	for family, want := range map[string]string{"ip4": "10.0.0.1", "ip6": "2001:db8::1"} {
		ips, err := r.forward(context.Background(), family, "host.crawler.example")
		if err != nil || len(ips) != 1 || ips[0] != netip.MustParseAddr(want) {
			t.Errorf("forward %s: got %v, %v; want %s (after the CNAME)", family, ips, err, want)
		}
	}
}

// TestDNSClientReusesSockets: a resolver on loopback keeps the sockets of
// answered queries, and a packet that comes after an answer, waiting in a
// reused socket, is not taken for the next query's answer.
func TestDNSClientReusesSockets(t *testing.T) {
	addr, _ := oddServer(t)
	c := newResolver(addr).(*dnsClient)
	if c.pool == nil {
		t.Fatal("a resolver on 127.0.0.1 has no socket pool")
	}
	ctx := context.Background()
	for range 20 {
		if _, err := c.ptr(ctx, netip.MustParseAddr("10.0.0.1")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.pool.idle); n != 1 {
		t.Fatalf("%d idle sockets after 20 lookups one after the other, want 1", n)
	}
	// A query that times out closes its socket: the late answer has
	// nowhere to wait.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.ptr(short, netip.MustParseAddr("10.0.0.9")); err == nil {
		t.Fatal("the late answer came in time")
	}
	if n := len(c.pool.idle); n != 0 {
		t.Fatalf("%d idle sockets after a timeout, want 0 (its socket closed)", n)
	}
	// A forgery that comes after an answer waits in the reused socket,
	// and is not taken for the next query's answer.
	if got := readPTR(c, "10.0.0.21", time.Second, false); got != "not found" {
		t.Fatalf("10.0.0.21: read %q, want not found", got)
	}
	time.Sleep(100 * time.Millisecond)
	names, err := c.ptr(ctx, netip.MustParseAddr("10.0.0.1"))
	if err != nil || len(names) != 2 || names[0] != "a.crawler.example." || len(c.pool.idle) != 1 {
		t.Fatalf("after a forged answer in a reused socket: got %q, %v, %d idle sockets", names, err, len(c.pool.idle))
	}
	c.close()
	if len(c.pool.idle) != 0 {
		t.Fatal("close left idle sockets")
	}
	if _, err := c.ptr(ctx, netip.MustParseAddr("10.0.0.1")); err != nil {
		t.Fatalf("after close: %v (a lookup still works, on a socket of its own)", err)
	}
	if len(c.pool.idle) != 0 {
		t.Fatal("a socket was kept after close")
	}
	if far := newResolver("192.0.2.1:53").(*dnsClient); far.pool != nil {
		t.Fatal("a resolver off loopback reuses sockets: its queries would leave from one port")
	}
	if _, ok := newResolver("").(systemResolver); !ok {
		t.Fatal("no resolver setting: not the system's")
	}
}

func TestReverseName(t *testing.T) {
	for _, a := range []string{"66.249.66.1", "0.0.0.0", "255.255.255.255", "2001:4860:4801:2::1", "::ffff:10.0.0.1", "::"} {
		want, err := dns.ReverseAddr(netip.MustParseAddr(a).Unmap().String())
		if err != nil {
			t.Fatal(err)
		}
		if got := reverseName(netip.MustParseAddr(a)); got != want {
			t.Errorf("reverseName(%s) = %q, want %q", a, got, want)
		}
	}
}

// FuzzDNSAnswer: any bytes read as an answer give records of the type
// asked or an error, never a panic; and isAnswer never panics.
func FuzzDNSAnswer(f *testing.F) {
	q := dnsmessage.Question{Name: dnsmessage.MustNewName("1.0.0.10.in-addr.arpa."), Type: dnsmessage.TypePTR, Class: dnsmessage.ClassINET}
	query, err := buildQuery(7, q)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(query[2:])
	for _, m := range fuzzAnswers() {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		isAnswer(msg, 7, q)
		err := readAnswer(msg, "1.0.0.10.in-addr.arpa.", "127.0.0.1:53", dnsmessage.TypePTR, func(p *dnsmessage.Parser, h dnsmessage.ResourceHeader) error {
			if h.Type != dnsmessage.TypePTR || h.Class != dnsmessage.ClassINET {
				t.Fatalf("a record of type %v, class %v", h.Type, h.Class)
			}
			_, err := p.PTRResource()
			return err
		})
		var de *net.DNSError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("error %T %v: not a *net.DNSError", err, err)
		}
	})
}

// fuzzAnswers are real answers, packed by github.com/miekg/dns.
func fuzzAnswers() [][]byte {
	var out [][]byte
	for _, rcode := range []int{dns.RcodeSuccess, dns.RcodeNameError, dns.RcodeServerFailure} {
		m := new(dns.Msg)
		m.SetQuestion("1.0.0.10.in-addr.arpa.", dns.TypePTR)
		m.Id, m.Response, m.Rcode = 7, true, rcode
		m.Answer = []dns.RR{
			&dns.CNAME{Hdr: dns.RR_Header{Name: "1.0.0.10.in-addr.arpa.", Rrtype: dns.TypeCNAME, Class: dns.ClassINET}, Target: "1.0/25.0.0.10.in-addr.arpa."},
			&dns.PTR{Hdr: dns.RR_Header{Name: "1.0/25.0.0.10.in-addr.arpa.", Rrtype: dns.TypePTR, Class: dns.ClassINET}, Ptr: "crawl.googlebot.com."},
		}
		b, _ := m.Pack()
		out = append(out, b)
	}
	return out
}

// TestDNSClientReadsAsGo: the client and Go's resolver, asking the same
// server, read each answer alike: the same names, "not found" for the
// same ones, a failure for the same ones.
func TestDNSClientReadsAsGo(t *testing.T) {
	addr, _ := oddServer(t)
	ours := newResolver(addr)
	defer ours.close()
	var d net.Dialer
	gos := systemResolver{&net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}}
	for i := 1; i <= 19; i++ {
		if i == 9 || i == 10 { // late, silent: no answer to read
			continue
		}
		a := "10.0.0." + strconv.Itoa(i)
		if got, want := readPTR(ours, a, time.Second, false), readPTR(gos, a, time.Second, false); got != want {
			t.Errorf("%s: the client read %q, Go's resolver %q", a, got, want)
		}
	}
	for _, q := range []struct{ family, name string }{{"ip4", "host.crawler.example"}, {"ip6", "host.crawler.example"}, {"ip4", "none.crawler.example"}} {
		got, gerr := ours.forward(context.Background(), q.family, q.name)
		want, werr := gos.forward(context.Background(), q.family, q.name)
		if !slices.Equal(got, want) || (gerr == nil) != (werr == nil) {
			t.Errorf("forward %s %s: the client read %v, %v; Go's resolver %v, %v", q.family, q.name, got, gerr, want, werr)
		}
	}
}

// BenchmarkLookup: one forward-confirmed pair of queries (a PTR, then an
// A) against the tests' DNS server on loopback, by the verifier's client
// (reused sockets) and by Go's resolver (a socket per query), the server's
// work included.
func BenchmarkLookup(b *testing.B) {
	srv := testdns.Start(b)
	srv.PTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
	srv.Host("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
	var d net.Dialer
	for _, tc := range []struct {
		name string
		r    resolver
	}{
		{"client", newResolver(srv.Addr)},
		{"go", systemResolver{&net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, srv.Addr)
		}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			defer tc.r.close()
			addr := netip.MustParseAddr("66.249.66.1")
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				names, err := tc.r.ptr(ctx, addr)
				if err == nil {
					_, err = tc.r.forward(ctx, "ip4", strings.TrimSuffix(names[0], "."))
				}
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
