package sites

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The outbound calls a site's file chooses (a robots.txt redirect away
// from the site, an RSL document, a licence server): their client, and
// the rule that keeps them out of the private network.

// publicOnlyKey marks the context of a request that may connect to public
// addresses only (see guardedDial).
type publicOnlyKey struct{}

// isPublic reports whether ip is an address a redirect may lead to:
// not loopback, private (RFC 1918, RFC 4193), link-local, unspecified or
// multicast.
func isPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified())
}

// privateHost reports whether host is, or resolves to, an address that is
// not public; "localhost" is private.
func privateHost(ctx context.Context, host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return !isPublic(ip)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if !isPublic(ip) {
			return true
		}
	}
	return false
}

// guardedDial dials as d does; for a request marked public-only it
// resolves the host itself and connects only to public addresses, so a
// redirect cannot make the guard connect into the private network (a
// name that resolves to 127.0.0.1 included: the check is on the address
// dialled, not on the name).
func guardedDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !publicOnly(ctx, ctx.Value(publicOnlyKey{})) {
			return d.DialContext(ctx, network, addr)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		err = fmt.Errorf("%s refused: a site's file chose it (a robots.txt redirect, a licence's URL), and it resolves to no public address", host)
		for _, ip := range ips {
			if !isPublic(ip) {
				continue
			}
			c, derr := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if derr == nil {
				return c, nil
			}
			err = derr
		}
		return nil, err
	}
}

// NewHTTPClient returns the client of URL sources: it never follows
// redirects (the Cache does, counting them) and gives up after timeout.
// Without rt, a request marked public-only (Foreign, a redirect away from
// the site) gets a connection of its own, dialled under its rules (see
// byMark).
func NewHTTPClient(rt http.RoundTripper, timeout time.Duration) *http.Client {
	if rt == nil {
		transport := func(pooled bool) *http.Transport {
			return &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           guardedDial(&net.Dialer{Timeout: timeout}),
				TLSHandshakeTimeout:   timeout,
				ResponseHeaderTimeout: timeout,
				MaxIdleConnsPerHost:   2,
				IdleConnTimeout:       time.Minute,
				DisableKeepAlives:     !pooled,
			}
		}
		rt = byMark{pooled: transport(true), unpooled: transport(false)}
	}
	return &http.Client{
		Transport: rt,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// byMark sends a request marked public-only through a transport that
// keeps no connection: an idle connection, dialled for another request
// under other rules (a private site's fetch of the same host), would be
// used without guardedDial's check. Marked requests are the rare ones (a
// document's fetch, a licence server's keys, an introspection).
type byMark struct{ pooled, unpooled http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (b byMark) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Context().Value(publicOnlyKey{}) != nil {
		return b.unpooled.RoundTrip(r)
	}
	return b.pooled.RoundTrip(r)
}

// Foreign returns ctx marked, for a client of NewHTTPClient, to connect to
// public addresses only when rawURL's host is not siteHost (the site's own
// host name) and siteHost is not in the private network itself: for a
// fetch whose URL a site's file chose (an RSL document that robots.txt
// names, its licence server), as for a robots.txt redirect away from the
// site. An unparsable URL is marked too. Whether siteHost is in the
// private network (a DNS lookup for a name) is found at the first dial
// of a connection, not before: a call that makes none costs none.
func Foreign(ctx context.Context, siteHost, rawURL string) context.Context {
	u, err := url.Parse(rawURL)
	if err == nil && strings.EqualFold(u.Hostname(), siteHost) {
		return ctx
	}
	return context.WithValue(ctx, publicOnlyKey{}, &foreignSite{host: siteHost})
}

// foreignSite is Foreign's mark: public addresses only, unless the site's
// own host is private, which is found once, when first needed.
type foreignSite struct {
	host    string
	once    sync.Once
	private bool
}

// publicOnly reports whether a request marked with ctx's value v may
// connect to public addresses only.
func publicOnly(ctx context.Context, v any) bool {
	switch m := v.(type) {
	case nil:
		return false
	case *foreignSite:
		m.once.Do(func() { m.private = privateHost(ctx, m.host) })
		return !m.private
	}
	return true
}
