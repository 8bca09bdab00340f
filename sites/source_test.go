package sites

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testorigin"
)

// canary is a loopback listener that counts the connections it gets.
type canary struct {
	*httptest.Server
	conns atomic.Int32
}

func newCanary(t *testing.T) *canary {
	c := &canary{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /\n")
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

// TestSelfFetchNeverConnects: an upstream that answers /robots.txt with a
// redirect built from the Host header (the common "redir
// https://{host}{uri}") cannot make the guard connect to a host the client
// names: the default source follows redirects inside the origin handler.
func TestSelfFetchNeverConnects(t *testing.T) {
	can := newCanary(t)
	canHost := strings.TrimPrefix(can.URL, "http://")
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://"+r.Host+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
	cfg := testConfig(SelfSource())
	cfg.FetchTimeout = duration.Duration(2 * time.Second)
	c := newCache(cfg)
	for _, host := range []string{canHost, "localhost:" + strings.Split(canHost, ":")[1]} {
		get(c, host, origin)
	}
	if n := can.conns.Load(); n != 0 {
		t.Fatalf("the guard opened %d connections to the host named by the client", n)
	}
}

// TestURLSourceRedirectGuard: a redirect away from a public configured URL
// may not lead to a loopback address; from a private configured URL it may.
func TestURLSourceRedirectGuard(t *testing.T) {
	can := newCanary(t)
	target, _ := url.Parse(can.URL + "/robots.txt")
	client := NewHTTPClient(nil, 2*time.Second)
	public := &urlSource{fixed: &url.URL{Scheme: "http", Host: "192.0.2.1", Path: "/robots.txt"}, client: client}
	if _, err := public.Fetch(context.Background(), Request{URL: target, Redirects: 1}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("redirect from a public URL to loopback: err %v", err)
	}
	if n := can.conns.Load(); n != 0 {
		t.Fatalf("%d connections to the loopback canary", n)
	}
	private := &urlSource{fixed: &url.URL{Scheme: "http", Host: "127.0.0.1:1", Path: "/robots.txt"}, client: client}
	res, err := private.Fetch(context.Background(), Request{URL: target, Redirects: 1})
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("redirect within the private network of a private URL: %v %d", err, res.StatusCode)
	}
}

func TestIsPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "192.0.2.1": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"::1": false, "fe80::1": false, "fd00::1": false, "0.0.0.0": false, "::": false, "::ffff:127.0.0.1": false, "224.0.0.1": false,
	} {
		if got := isPublic(netipMust(addr)); got != want {
			t.Errorf("isPublic(%s) = %v", addr, got)
		}
	}
}

func netipMust(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestIsSelfFetch: only a request with the mark in its context and the
// self-fetch address (or none) is the guard's own fetch; the address alone,
// which a client cannot have anyway, or the mark behind a real peer, is not.
func TestIsSelfFetch(t *testing.T) {
	marked := context.WithValue(context.Background(), internalKey{}, true)
	for _, c := range []struct {
		ctx  context.Context
		addr string
		want bool
	}{
		{marked, SelfFetchAddr, true},
		{marked, "", true},
		{marked, "192.0.2.1:1234", false},
		{context.Background(), SelfFetchAddr, false},
		{context.Background(), "", false},
	} {
		if got := IsSelfFetch(c.ctx, c.addr); got != c.want {
			t.Errorf("IsSelfFetch(marked=%v, %q) = %v, want %v", c.ctx == marked, c.addr, got, c.want)
		}
	}
}

// TestForeign: a fetch whose URL a site's file chose, on another host
// than the site's, reaches public addresses only, unless the site's own
// host is private (found when the fetch dials, for the first time).
func TestForeign(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	client := NewHTTPClient(nil, 5*time.Second)
	for _, tt := range []struct {
		siteHost string
		ok       bool
	}{
		{"127.0.0.1", true},     // the URL's own host: not marked
		{"localhost", true},     // a private site may reach its private network
		{"192.168.1.10", true},  // so may one on a private address
		{"203.0.113.5", false},  // a public site may not
		{"site.invalid", false}, // nor one whose host does not resolve
	} {
		req, err := http.NewRequestWithContext(Foreign(context.Background(), tt.siteHost, srv.URL), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != tt.ok {
			t.Errorf("site %s, a fetch of %s: %v; want allowed %v", tt.siteHost, srv.URL, err, tt.ok)
		}
	}
}
