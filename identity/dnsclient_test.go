package identity

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
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

func TestDNSClient(t *testing.T) {
	addr, tcpQueries := oddServer(t)
	r := newResolver(addr)
	defer r.close()
	ask := func(a string, timeout time.Duration) ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return r.ptr(ctx, netip.MustParseAddr(a))
	}
	for _, tc := range []struct {
		addr     string
		names    []string
		notFound bool
		err      string // a failure that is not "not found"
	}{
		{addr: "10.0.0.1", names: []string{"a.crawler.example.", "b.crawler.example."}},
		{addr: "10.0.0.2", notFound: true},
		{addr: "10.0.0.3", notFound: true},
		{addr: "10.0.0.4", err: "server answered RCodeServerFailure"},
		// As Go's resolver: a label with a dot makes the answer unreadable,
		// and a name with other bytes than a host name's is dropped.
		{addr: "10.0.0.5", err: "unreadable answer: invalid dns name"},
		{addr: "10.0.0.6", names: []string{"good.crawler.example."}},
		{addr: "10.0.0.11", err: "PTR records that are not domain names"},
		{addr: "10.0.0.7", names: []string{"real.crawler.example."}},
		{addr: "10.0.0.8", names: []string{"long.crawler.example."}},
		{addr: "10.0.0.10", err: "i/o timeout"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			names, err := ask(tc.addr, 200*time.Millisecond)
			var de *net.DNSError
			switch {
			case tc.names != nil && (err != nil || !slices.Equal(names, tc.names)):
				t.Fatalf("got %q, %v; want %q", names, err, tc.names)
			case tc.notFound && (!errors.As(err, &de) || !de.IsNotFound):
				t.Fatalf("got %q, %v; want not found", names, err)
			case tc.err != "" && (!errors.As(err, &de) || de.IsNotFound || de.Err != tc.err):
				t.Fatalf("got %q, %v; want the failure %q", names, err, tc.err)
			}
		})
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

// TestDNSClientReusesSockets: a resolver on loopback keeps its sockets,
// and an answer that comes after its query's deadline, waiting in a
// reused socket, is not taken for the next query's.
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
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.ptr(short, netip.MustParseAddr("10.0.0.9")); err == nil {
		t.Fatal("the late answer came in time")
	}
	time.Sleep(400 * time.Millisecond) // the late answer waits in the socket
	names, err := c.ptr(ctx, netip.MustParseAddr("10.0.0.1"))
	if err != nil || len(names) != 2 || names[0] != "a.crawler.example." {
		t.Fatalf("after a late answer: got %q, %v", names, err)
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
	read := func(r resolver, a string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		names, err := r.ptr(ctx, netip.MustParseAddr(a))
		var de *net.DNSError
		switch {
		case len(names) > 0: // Go's gives the names it kept with an error for the others
			return "names " + strings.Join(names, " ")
		case errors.As(err, &de) && de.IsNotFound:
			return "not found"
		case err != nil:
			return "failure"
		}
		return "nothing"
	}
	for _, a := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.11", "10.0.0.12"} {
		if got, want := read(ours, a), read(gos, a); got != want {
			t.Errorf("%s: the client read %q, Go's resolver %q", a, got, want)
		}
	}
}
