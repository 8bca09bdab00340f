package identity

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// maxIdleDNSConns bounds the UDP sockets a loopback resolver keeps for
// reuse: one per lookup that may run at once.
const maxIdleDNSConns = MaxConcurrentLookups + GoodSlots

// resolver is what a reverse-DNS check asks: the names of an address's PTR
// records, and a name's addresses of one family ("ip4" or "ip6"). A
// definite "no such record" is a *net.DNSError with IsNotFound.
type resolver interface {
	ptr(ctx context.Context, addr netip.Addr) ([]string, error)
	forward(ctx context.Context, family, name string) ([]netip.Addr, error)
	close()
}

// newResolver returns the system's resolver (Go's, reading
// /etc/resolv.conf and /etc/hosts) when addr is empty, else a client of
// the DNS server at addr (host:port) only.
func newResolver(addr string) resolver {
	if addr == "" {
		return systemResolver{net.DefaultResolver}
	}
	c := &dnsClient{server: addr}
	if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().Unmap().IsLoopback() {
		c.pool = &udpPool{addr: net.UDPAddrFromAddrPort(ap)}
	}
	return c
}

// systemResolver is Go's resolver.
type systemResolver struct{ r *net.Resolver }

func (s systemResolver) ptr(ctx context.Context, addr netip.Addr) ([]string, error) {
	return s.r.LookupAddr(ctx, addr.String())
}

func (s systemResolver) forward(ctx context.Context, family, name string) ([]netip.Addr, error) {
	return s.r.LookupNetIP(ctx, family, name)
}

func (systemResolver) close() {}

// dnsClient asks one DNS server (the resolver setting) a PTR, an A or an
// AAAA question, in messages of golang.org/x/net/dns/dnsmessage (the
// package Go's resolver is built on): one query within the check's
// deadline, and over TCP again when the answer is truncated. It reads answers as Go's
// resolver does (readAnswer, plainName): an NXDOMAIN, or an answer
// without a record of the type asked, is "not found"; a name that is not
// a host name is dropped; an answer whose ID or question is not the
// query's is passed over (a second answer to an earlier query, or a
// forgery). It has none of Go's resolver's per-query goroutines and
// /etc/hosts reads: with udpPool's sockets, that took the audit's lookups
// from 3× to under 2× its time offline (docs/audit.md). For a server on
// a loopback IP address (a caching resolver on this machine, the tests'
// internal/testdns) the UDP sockets are kept for reuse; elsewhere each
// query has a socket of its own, so that it leaves from a random port (a
// forger off the path must guess the port as well as the query's ID).
type dnsClient struct {
	server  string
	pool    *udpPool  // nil: a socket per query
	buffers sync.Pool // of *[maxDNSMessage]byte, that UDP answers are read into
}

// maxDNSMessage is the UDP answer size the queries offer (EDNS0), as Go's
// resolver does.
const maxDNSMessage = 1232

func (c *dnsClient) ptr(ctx context.Context, addr netip.Addr) ([]string, error) {
	rev := reverseName(addr)
	var names []string
	dropped := false
	err := c.ask(ctx, rev, dnsmessage.TypePTR, func(p *dnsmessage.Parser, h dnsmessage.ResourceHeader) error {
		r, err := p.PTRResource()
		if err != nil {
			return err
		}
		if n := r.PTR.String(); plainName(n) {
			names = append(names, n)
		} else {
			dropped = true
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case len(names) == 0 && dropped:
		return nil, &net.DNSError{Err: "PTR records that are not domain names", Name: rev, Server: c.server}
	case len(names) == 0:
		return nil, notFound(rev, c.server)
	}
	return names, nil
}

func (c *dnsClient) forward(ctx context.Context, family, name string) ([]netip.Addr, error) {
	qtype := dnsmessage.TypeAAAA
	if family == "ip4" {
		qtype = dnsmessage.TypeA
	}
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	var ips []netip.Addr
	err := c.ask(ctx, name, qtype, func(p *dnsmessage.Parser, h dnsmessage.ResourceHeader) error {
		if h.Type == dnsmessage.TypeA {
			r, err := p.AResource()
			if err == nil {
				ips = append(ips, netip.AddrFrom4(r.A))
			}
			return err
		}
		r, err := p.AAAAResource()
		if err == nil {
			ips = append(ips, netip.AddrFrom16(r.AAAA))
		}
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case len(ips) == 0:
		return nil, notFound(name, c.server)
	}
	return ips, nil
}

// ask asks the server the question (name, qtype) and calls each with the
// header of each answer record of that type, the parser at its body.
func (c *dnsClient) ask(ctx context.Context, name string, qtype dnsmessage.Type, each func(*dnsmessage.Parser, dnsmessage.ResourceHeader) error) error {
	qname, err := dnsmessage.NewName(name)
	if err != nil {
		return &net.DNSError{Err: err.Error(), Name: name, Server: c.server}
	}
	q := dnsmessage.Question{Name: qname, Type: qtype, Class: dnsmessage.ClassINET}
	id := uint16(rand.Uint32())
	query, err := buildQuery(id, q)
	if err != nil {
		return &net.DNSError{Err: err.Error(), Name: name, Server: c.server}
	}
	buf, _ := c.buffers.Get().(*[maxDNSMessage]byte)
	if buf == nil {
		buf = new([maxDNSMessage]byte)
	}
	defer c.buffers.Put(buf)
	answer, err := c.udp(ctx, id, q, query, buf[:])
	if err == nil {
		var p dnsmessage.Parser
		if h, _ := p.Start(answer); h.Truncated {
			answer, err = c.tcp(ctx, id, q, query)
		}
	}
	if err != nil {
		de := &net.DNSError{Err: err.Error(), Name: name, Server: c.server}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			de.Err, de.IsTimeout, de.IsTemporary = "i/o timeout", true, true
		}
		return de
	}
	return readAnswer(answer, name, c.server, qtype, each)
}

// readAnswer reads msg, the answer to the question (name, qtype) asked of
// server, with the checks of Go's resolver: an NXDOMAIN is "not found";
// another failure code (the extended one of an EDNS0 record included) is
// an error, and so is a lame referral (success without a record, without
// the authoritative or recursion-available flags: a server that is not a
// resolver); each is called with the header of each answer record of type
// qtype.
func readAnswer(msg []byte, name, server string, qtype dnsmessage.Type, each func(*dnsmessage.Parser, dnsmessage.ResourceHeader) error) error {
	dnsErr := func(text string) *net.DNSError { return &net.DNSError{Err: text, Name: name, Server: server} }
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err == nil {
		err = p.SkipAllQuestions()
	}
	if err != nil {
		return dnsErr("unreadable answer: " + err.Error())
	}
	rcode, additional := extendedRCode(p, h)
	switch rcode {
	case dnsmessage.RCodeSuccess:
	case dnsmessage.RCodeNameError:
		return notFound(name, server)
	default:
		de := dnsErr("server answered " + rcode.String())
		de.IsTemporary = rcode == dnsmessage.RCodeServerFailure
		return de
	}
	seen := false
	for {
		ah, err := p.AnswerHeader()
		if err == dnsmessage.ErrSectionDone {
			break
		}
		if err == nil {
			seen = true
			if ah.Type == qtype && ah.Class == dnsmessage.ClassINET {
				err = each(&p, ah)
			} else {
				err = p.SkipAnswer()
			}
		}
		if err != nil {
			return dnsErr("unreadable answer: " + err.Error())
		}
	}
	if !seen && !h.Authoritative && !h.RecursionAvailable && !additional {
		return dnsErr("lame referral")
	}
	return nil
}

// extendedRCode returns the answer's failure code, with the upper bits of
// an EDNS0 record, and whether it has additional records; p (a copy) is at
// the answers.
func extendedRCode(p dnsmessage.Parser, h dnsmessage.Header) (dnsmessage.RCode, bool) {
	if p.SkipAllAnswers() != nil || p.SkipAllAuthorities() != nil {
		return h.RCode, false
	}
	for additional := false; ; additional = true {
		ah, err := p.AdditionalHeader()
		if err != nil {
			return h.RCode, additional
		}
		if ah.Type == dnsmessage.TypeOPT {
			return ah.ExtendedRCode(h.RCode), true
		}
		if p.SkipAdditional() != nil {
			return h.RCode, true
		}
	}
}

// buildQuery is the query with id asking q, with recursion desired and an
// EDNS0 record offering maxDNSMessage bytes.
func buildQuery(id uint16, q dnsmessage.Question) ([]byte, error) {
	b := dnsmessage.NewBuilder(make([]byte, 2, 128), dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAdditionals(); err != nil {
		return nil, err
	}
	var rh dnsmessage.ResourceHeader
	if err := rh.SetEDNS0(maxDNSMessage, dnsmessage.RCodeSuccess, false); err != nil {
		return nil, err
	}
	if err := b.OPTResource(rh, dnsmessage.OPTResource{}); err != nil {
		return nil, err
	}
	msg, err := b.Finish()
	if err != nil {
		return nil, err
	}
	// The two bytes before the message are its length, for TCP.
	binary.BigEndian.PutUint16(msg, uint16(len(msg)-2))
	return msg, nil
}

// isAnswer reports whether msg answers the query with id asking q.
func isAnswer(msg []byte, id uint16, q dnsmessage.Question) bool {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || h.ID != id || !h.Response {
		return false
	}
	got, err := p.Question()
	return err == nil && got.Type == q.Type && got.Class == q.Class && equalFoldName(got.Name, q.Name)
}

// equalFoldName reports whether two names are equal, ignoring case.
func equalFoldName(a, b dnsmessage.Name) bool {
	return bytes.EqualFold(a.Data[:a.Length], b.Data[:b.Length])
}

// udp sends query (its length prefix left out) and reads into buf until
// the answer to it, the deadline of ctx, or its cancellation. The query is
// sent once, as Go's resolver sends it within a check's deadline under its
// defaults (5 s a try; a check has 2 s): a silent zone costs one query.
func (c *dnsClient) udp(ctx context.Context, id uint16, q dnsmessage.Question, query, buf []byte) ([]byte, error) {
	var conn *net.UDPConn
	var err error
	if c.pool != nil {
		conn, err = c.pool.get()
	} else {
		var d net.Dialer
		var nc net.Conn
		if nc, err = d.DialContext(ctx, "udp", c.server); err == nil {
			conn = nc.(*net.UDPConn)
		}
	}
	if err != nil {
		return nil, err
	}
	// A cancelled ctx ends the read at once. A socket is reused only
	// after its query was answered: one that timed out may still get
	// the late answer.
	answered := false
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer func() {
		if stop() && answered && c.pool != nil {
			c.pool.put(conn)
		} else {
			conn.Close()
		}
	}()
	dl, _ := ctx.Deadline() // zero: none
	if err := conn.SetDeadline(dl); err != nil {
		return nil, err
	}
	if _, err := conn.Write(query[2:]); err != nil {
		return nil, err
	}
	for {
		n, err := conn.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if isAnswer(buf[:n], id, q) {
			answered = true
			return buf[:n], nil
		}
	}
}

// tcp asks again over TCP (RFC 1035 §4.2.2: each message after its length
// in two bytes), after a truncated answer.
func (c *dnsClient) tcp(ctx context.Context, id uint16, q dnsmessage.Question, query []byte) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write(query); err != nil {
		return nil, err
	}
	var size [2]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(conn, msg); err != nil {
		return nil, err
	}
	if !isAnswer(msg, id, q) {
		return nil, errors.New("an answer over TCP to another query")
	}
	return msg, nil
}

func (c *dnsClient) close() {
	if c.pool != nil {
		c.pool.close()
	}
}

// reverseName is addr's name under in-addr.arpa or ip6.arpa.
func reverseName(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.Is4() {
		b := addr.As4()
		out := make([]byte, 0, 29)
		for i := 3; i >= 0; i-- {
			out = append(strconv.AppendUint(out, uint64(b[i]), 10), '.')
		}
		return string(append(out, "in-addr.arpa."...))
	}
	const hex = "0123456789abcdef"
	b := addr.As16()
	out := make([]byte, 0, 73)
	for i := len(b) - 1; i >= 0; i-- {
		out = append(out, hex[b[i]&0xf], '.', hex[b[i]>>4], '.')
	}
	return string(append(out, "ip6.arpa."...))
}

// notFound is Go's resolver's "no such host".
func notFound(name, server string) error {
	return &net.DNSError{Err: "no such host", Name: name, Server: server, IsNotFound: true}
}

// plainName reports whether s (with or without its final dot) is a host
// name as Go's resolver requires of the names it returns: labels of 1 to
// 63 letters, digits, '_' and '-', none beginning or ending with '-', at
// most 253 bytes in all, and not all digits (an address, not a name).
func plainName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	letters := false
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			switch ch := label[i]; {
			case '0' <= ch && ch <= '9':
			case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', ch == '_', ch == '-':
				letters = true
			default:
				return false
			}
		}
	}
	return letters
}

// udpPool keeps the connected UDP sockets of a resolver on a loopback
// address for reuse. A query on a socket of its own leaves from a random
// port, so that a forger off the path must guess it as well as the query's
// ID; on loopback nobody off this machine can send an answer, and
// creating, connecting and closing a socket per query was about a third
// of the audit's lookup CPU (docs/audit.md). A socket whose query went
// unanswered is closed, not reused; a reused one may still get a second
// answer to its earlier query (a duplicate, a forgery): dnsClient.udp
// reads past it.
type udpPool struct {
	addr *net.UDPAddr

	mu     sync.Mutex
	idle   []*net.UDPConn
	closed bool
}

func (p *udpPool) get() (*net.UDPConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return net.DialUDP("udp", nil, p.addr)
}

func (p *udpPool) put(c *net.UDPConn) {
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdleDNSConns {
		c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// close closes the idle sockets; the ones in use are closed as they are
// given back.
func (p *udpPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.idle {
		c.Close()
	}
	p.idle = nil
}
