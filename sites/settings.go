package sites

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/duration"
)

// Defaults and bounds of Config. A zero field takes its default.
const (
	// DefaultRefresh is short because a refresh is cheap: it revalidates
	// the copy with its ETag / Last-Modified (or a file's size and
	// modification time), and an unchanged file answers 304 and is not
	// parsed again. An edit is in force within a minute, and at once
	// after an invalidation (which a Caddy reload makes).
	DefaultRefresh           = time.Minute
	MaxRefresh               = 24 * time.Hour
	DefaultFetchTimeout      = 5 * time.Second
	MaxFetchTimeout          = time.Minute
	DefaultMaxSites          = 1000
	DefaultNewSitesPerSecond = 50
	DefaultMaxBytes          = 256 << 20
	MinMaxBytes              = 4 << 20
)

// Values of Config.OnUnreachable.
const (
	UnreachableDisallow = "disallow"
	UnreachableAllow    = "allow"
)

// Config is the robots_txt block of robots_guard: where each site's
// robots.txt comes from, and how it is fetched and cached. Its JSON form is
// the block's; a zero field takes its default (WithDefaults).
type Config struct {
	// Source says where each site's robots.txt comes from. Empty (the
	// default) means the protected site itself: a virtual GET /robots.txt
	// sent to the handler that serves the site (the request's origin handler; in Caddy,
	// through the server, past the guard), so whatever serves the site —
	// reverse_proxy, file_server, respond, a Go handler — is what gets
	// enforced. A value starting with http:// or https:// is a URL fetched
	// with the guard's own HTTP client (FetchTimeout, at most 5
	// redirects, the body capped at 500 KiB); any other value is a file
	// path, checked by New (it must exist and be readable) and read again
	// when its size or modification time changes. guard.WithSource overrides
	// this field.
	Source string `json:"source,omitempty"`

	// Refresh is how long a fetched robots.txt is used before it is
	// revalidated: fetched again with If-None-Match / If-Modified-Since
	// (a file source compares size and modification time), so an
	// unchanged file costs a 304 and no parse. Default 1m; at most 24h
	// (RFC 9309 §2.4). While a refresh runs, requests are decided with the
	// previous copy. A Caddy config reload (and Engine.Invalidate)
	// revalidates every cached robots.txt before the next bot request of
	// its site.
	Refresh duration.Duration `json:"refresh,omitempty"`

	// FetchTimeout bounds one robots.txt fetch, redirects included, and the
	// time a request waits for the first fetch of its site. Default 5s; at
	// most 1m.
	FetchTimeout duration.Duration `json:"fetch_timeout,omitempty"`

	// OnUnreachable says what bots may do when a site's robots.txt is
	// unreachable (5xx, 429, network error, timeout) and no earlier copy is
	// known: "disallow" (the default, as RFC 9309 §2.3.1.4 asks) or "allow".
	OnUnreachable string `json:"on_unreachable,omitempty"`

	// MaxSites caps the number of sites (scheme, host name and server
	// port) whose robots.txt is cached, in two LRU segments with
	// frequency-based admission (see package sites), so that a flood of
	// new names cannot push out the sites in use. Default 1000. It matters
	// for catch-all servers that accept any Host header.
	MaxSites int `json:"max_sites,omitempty"`

	// MaxBytes bounds the memory of the compiled robots.txt files that
	// cached sites use, as an estimate (8 bytes per byte of body plus 4 KiB
	// per file, from measurements) counted once per distinct file however
	// many sites share it. Over it, the least recently used sites are
	// dropped. Default 256 MiB: a thousand distinct 22 KB files, or 64 of
	// the largest (500 KiB) ones; at least 4 MiB.
	MaxBytes int64 `json:"max_bytes,omitempty"`

	// NewSitesPerSecond bounds the first robots.txt fetches of sites not
	// seen before, so that a flood of Host names costs at most this many
	// upstream fetches a second (after a burst of four seconds' worth). A
	// bot's request for a new site over the bound gets 429 with
	// Retry-After 1 (reason new_site_rate) and is fetched for at a later
	// request; other clients pass. Default 50. A server that serves more
	// sites fills its cache at this pace after a start: raise it there.
	// One client network (a /24 or /48) may spend at most an eighth of it
	// (4,096 networks are tracked, then the table starts afresh), so a
	// flood of Host names from one network cannot spend everyone's, and
	// the sites of SiteNames spend none of it.
	NewSitesPerSecond int `json:"new_sites_per_second,omitempty"`

	// SiteNames lists the host names the server is configured for
	// ("example.com"): their first robots.txt fetch is never postponed by
	// NewSitesPerSecond, whatever a flood of other names does. Wildcards
	// ("*.example.com") exempt nothing: they cover any number of hosts. The
	// Caddy module adds the names of its server's host matchers. With
	// Origin, they are also the only sites that get a robots.txt: exact
	// names, and wildcards of one label ("*.example.com" covers
	// "a.example.com", not "example.com" nor "a.b.example.com").
	SiteNames []string `json:"site_names,omitempty"`

	// Origin is for a guard that does not serve the sites it protects (the
	// decision service behind nginx, Traefik, HAProxy or Envoy): the
	// address, "http://127.0.0.1:8080" or "https://upstream.internal", that
	// each site's /robots.txt is fetched from, sent with the site's own
	// Host header and X-Forwarded-Proto and X-Forwarded-Host naming the
	// site (the upstream, or the proxy itself). The host names a
	// client writes never choose where the guard connects: only the hosts
	// of SiteNames (which Origin requires) get a robots.txt, and any other
	// host is an unknown site, whose bots are refused (reason
	// unknown_site) and which costs no fetch. A redirect to another host is
	// followed there, to public addresses only. Source and Origin exclude
	// each other.
	Origin string `json:"origin,omitempty"`
}

// WithDefaults returns c with its zero fields set to their defaults, or an
// error that names the first invalid field, e.g. "robots_guard: robots_txt:
// refresh: must be at most 24h, got 48h0m0s". Whether a file source exists
// is checked by NewSource, not here, so that a configuration can be
// checked on another machine.
func (c Config) WithDefaults() (Config, error) {
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("robots_guard: robots_txt: %s: "+format, append([]any{field}, args...)...)
	}
	c.SiteNames = slices.Clone(c.SiteNames)
	if err := checkSource(c.Source); err != nil {
		return c, err
	}
	if err := c.checkOrigin(); err != nil {
		return c, err
	}
	switch {
	case c.Refresh < 0:
		return c, errf("refresh", "must be positive, got %s", time.Duration(c.Refresh))
	case c.Refresh == 0:
		c.Refresh = duration.Duration(DefaultRefresh)
	case time.Duration(c.Refresh) > MaxRefresh:
		return c, errf("refresh", "must be at most 24h, got %s", time.Duration(c.Refresh))
	}
	switch {
	case c.FetchTimeout < 0:
		return c, errf("fetch_timeout", "must be positive, got %s", time.Duration(c.FetchTimeout))
	case c.FetchTimeout == 0:
		c.FetchTimeout = duration.Duration(DefaultFetchTimeout)
	case time.Duration(c.FetchTimeout) > MaxFetchTimeout:
		return c, errf("fetch_timeout", "must be at most 1m, got %s", time.Duration(c.FetchTimeout))
	}
	switch c.OnUnreachable {
	case "":
		c.OnUnreachable = UnreachableDisallow
	case UnreachableDisallow, UnreachableAllow:
	default:
		return c, errf("on_unreachable", "must be %q or %q, got %q", UnreachableDisallow, UnreachableAllow, c.OnUnreachable)
	}
	for _, f := range []struct {
		v    *int
		def  int
		name string
	}{{&c.MaxSites, DefaultMaxSites, "max_sites"}, {&c.NewSitesPerSecond, DefaultNewSitesPerSecond, "new_sites_per_second"}} {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < 0:
			return c, errf(f.name, "must be positive, got %d", *f.v)
		}
	}
	switch {
	case c.MaxBytes == 0:
		c.MaxBytes = DefaultMaxBytes
	case c.MaxBytes < MinMaxBytes:
		return c, errf("max_bytes", "must be at least %d (4 MiB: one robots.txt of the largest size read, 500 KiB, compiled), got %d", MinMaxBytes, c.MaxBytes)
	}
	return c, nil
}

// NewSource returns the source that c.Origin or c.Source names: each
// site's robots.txt asked of the origin, the site itself (both empty), a
// URL fetched with client, or a file, which must exist and be
// readable (CheckFile).
func (c Config) NewSource(client *http.Client) (Source, error) {
	switch {
	case c.Origin != "":
		u, err := url.Parse(c.Origin)
		if err != nil {
			return nil, fmt.Errorf("robots_guard: robots_txt: origin: %w", err)
		}
		return OriginSource(u, client), nil
	case c.Source == "":
		return SelfSource(), nil
	case uriScheme.MatchString(c.Source): // http or https: checked by WithDefaults
		u, err := url.Parse(c.Source)
		if err != nil {
			return nil, fmt.Errorf("robots_guard: robots_txt: %w", err)
		}
		return URLSource(u, client), nil
	}
	if err := CheckFile(c.Source); err != nil {
		return nil, err
	}
	return FileSource(c.Source), nil
}

// checkOrigin checks Origin: an http:// or https:// address with a host
// and nothing after it, not beside Source, and with SiteNames.
func (c Config) checkOrigin() error {
	const field = "robots_guard: robots_txt: origin: "
	if c.Origin == "" {
		return nil
	}
	u, err := url.Parse(c.Origin)
	allow := makeAllowList(c.SiteNames)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf(field+"%q: write it as http://host[:port] or https://host[:port]", c.Origin)
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf(field+"%q: give the address only (each site's /robots.txt is asked of it), e.g. %q", c.Origin, u.Scheme+"://"+u.Host)
	case c.Source != "":
		return fmt.Errorf(field+"set beside source %q: give one of them (source: one robots.txt for every site; origin: each site's own, asked of this address)", c.Source)
	case len(allow.names) == 0 && len(allow.suffixes) == 0:
		return errors.New(field + "needs site_names: the hosts whose robots.txt is fetched from it (any other host is an unknown site, whose bots are refused)")
	}
	return nil
}

// hostPortPath matches a value that names a host and port without a scheme,
// such as "localhost:8081/robots.txt" or "[::1]:80".
var hostPortPath = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):[0-9]+(/.*)?$`)

// uriScheme matches the scheme of an absolute URI.
var uriScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// checkSource checks the form of Config.Source: an http:// or https://
// URL with a host, or something that can be a file path. Whether the file
// exists is checked by NewSource (CheckFile), not here, so that a
// configuration can be adapted on another machine.
func checkSource(v string) error {
	const field = "robots_guard: robots_txt: "
	if v == "" {
		return nil
	}
	if m := uriScheme.FindStringSubmatch(v); m != nil {
		switch scheme := strings.ToLower(m[1]); scheme {
		case "http", "https":
			u, err := url.Parse(v)
			if err != nil || u.Host == "" {
				return fmt.Errorf(field+"invalid URL %q: write it as http://host[:port]/robots.txt", v)
			}
			return nil
		case "file":
			return fmt.Errorf(field+"%q: write a file path without file://, e.g. %q", v, strings.TrimPrefix(v, m[0]))
		default:
			return fmt.Errorf(field+"%q: scheme %q is not supported; give an http:// or https:// URL, or a file path", v, m[1])
		}
	}
	if hostPortPath.MatchString(v) {
		return fmt.Errorf(field+"%q looks like a host and port without a scheme; write %q (or give a file path)", v, "http://"+v)
	}
	return nil
}

// looksLikeHost reports whether s, the first segment of a relative path,
// is rather a host: an IP address, localhost, or a name with a dot between
// two labels (not "." or "..").
func looksLikeHost(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil || s == "localhost" {
		return true
	}
	if name, _, err := net.SplitHostPort(s); err == nil {
		s = name
	}
	i := strings.IndexByte(s, '.')
	return i > 0 && i < len(s)-1 && !strings.ContainsAny(s, " \\")
}

// CheckFile checks that a Config.Source that is a file path names
// a readable regular file; URLs and the empty value pass. New calls it, so
// that a misspelt path fails at startup with a message naming robots_txt
// instead of leaving every site without rules.
func CheckFile(v string) error {
	if v == "" || uriScheme.MatchString(v) {
		return nil
	}
	hint := "give the path of a readable robots.txt, an http:// or https:// URL, or leave robots_txt out to enforce each site's own /robots.txt"
	if !filepath.IsAbs(v) {
		if wd, err := os.Getwd(); err == nil {
			hint = "a relative path is read from the working directory " + wd + "; " + hint
		}
	}
	f, err := os.Open(v)
	if err != nil {
		if first, _, ok := strings.Cut(v, "/"); ok && errors.Is(err, fs.ErrNotExist) && looksLikeHost(first) {
			hint = fmt.Sprintf("%q looks like a host and a path: for a URL write %q; %s", v, "http://"+v, hint)
		}
		return fmt.Errorf("robots_guard: robots_txt: %w (%s)", err, hint)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err == nil {
		var b [1]byte
		if _, rerr := f.Read(b[:]); rerr != nil && rerr != io.EOF {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("robots_guard: robots_txt: %s: %w (%s)", v, err, hint)
	}
	return nil
}
