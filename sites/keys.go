package sites

import (
	"strconv"
	"strings"
)

// Key identifies a site: scheme, canonical host name (lower-cased, no
// trailing dot, no port) and port (0 for the scheme's default). The port is
// the server's own when the front end knows it (Get's port), so a client
// cannot make one site many by writing ports, letter case or a trailing dot
// into its Host header.
type Key struct {
	https bool
	port  uint16
	host  string
}

// MakeKey builds the cache key of a site from the scheme, the Host header
// and the port the request came in on. The Host header's own port never
// counts: the client writes it. A port of 0 (unknown, as on a Unix socket)
// makes one site of every port. It allocates only for a host name with
// upper-case letters.
func MakeKey(scheme, host string, port int) Key {
	https := isHTTPS(scheme)
	name, _ := SplitHost(host)
	if port < 0 || port > 65535 {
		port = 0
	}
	if https && port == 443 || !https && port == 80 {
		port = 0
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			name = strings.ToLower(name)
			break
		}
	}
	return Key{https: https, host: name, port: uint16(port)}
}

// SplitHost splits a Host header into the host name, without brackets and
// trailing dots, and its port (0 when absent or not a number).
func SplitHost(h string) (name string, port int) {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			name, h = h[1:i], h[i+1:]
			if strings.HasPrefix(h, ":") {
				port = atoiPort(h[1:])
			}
			return name, port
		}
	}
	name = h
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h[:i], ':') < 0 {
		name, port = h[:i], atoiPort(h[i+1:])
	}
	for len(name) > 0 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	return name, port
}

// atoiPort reads a port number; 0 for anything else.
func atoiPort(s string) int {
	if len(s) == 0 || len(s) > 5 {
		return 0
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > 65535 {
		return 0
	}
	return n
}

// fetchHost is the Host of a site's robots.txt requests: the canonical
// host name, with the port of the client's Host header only when that is
// the server's own port (or the server's port is unknown) — so a client
// that writes another port cannot make the site's own robots.txt request
// go out under a Host the backend does not serve, and a backend behind a
// proxy gets the Host its clients use. Without a Host header, the
// canonical name and port.
func fetchHost(k Key, host string, port int) string {
	if host == "" {
		return k.HostPort()
	}
	name, hp := SplitHost(host)
	if strings.IndexByte(name, ':') >= 0 {
		name = "[" + name + "]"
	}
	name = strings.ToLower(name)
	if hp != 0 && (port <= 0 || hp == port) {
		return name + ":" + strconv.Itoa(hp)
	}
	return name
}

// Name is the site's name, as verdicts, the report, the dashboard and the
// audit write it: the scheme and the authority ("https://example.com",
// "http://127.0.0.1:8080"). Every name of a site is made here.
func (k Key) Name() string {
	if k.https {
		return "https://" + k.HostPort()
	}
	return "http://" + k.HostPort()
}

// HostPort is the authority of the site: its host name, in brackets when
// it is an IPv6 address, and its port unless it is the default.
func (k Key) HostPort() string {
	h := k.host
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]"
	}
	if k.port != 0 {
		h += ":" + strconv.Itoa(int(k.port))
	}
	return h
}

// isHTTPS reports whether scheme names HTTPS: the one rule MakeKey and
// Cache.GetRequest's short cut both apply, so that they key a request the
// same way.
func isHTTPS(scheme string) bool { return scheme == "https" || scheme == "HTTPS" }
