// Package caddymodule is the Caddy shell around the robotsguard engine: the
// http.handlers.robots_guard module, its Caddyfile directive robots_guard,
// Prometheus metrics and the "caddy robots" command. All decisions are made
// by guard.Engine; this package only translates between Caddy and it.
package caddymodule

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/limit"
)

// banListKey identifies the ban list of a Caddy instance: one in memory
// (store ""), or one per store (the store block's JSON), shared by every
// robots_guard block whatever its other options.
type banListKey struct{ store string }

// sharedBans is a ban list in the pool, with the store connection it uses
// (nil in memory) and that connection's log core.
type sharedBans struct {
	bans limit.Bans
	conn io.Closer
	log  *swapCore
}

// Destruct stops the list's following of the store and closes its
// connection.
func (s *sharedBans) Destruct() error {
	if c, ok := s.bans.(io.Closer); ok {
		c.Close()
	}
	if s.conn != nil {
		return s.conn.Close()
	}
	return nil
}

// checkForwarded logs, once per handler, a warning when a request's client
// address came from a forwarded header through a server whose
// trusted_proxies is set without trusted_proxies_strict: Caddy then takes
// the leftmost forwarded address that is not a trusted proxy, which the
// client writes, so a client can have its Crawl-delay budget, traps and
// bans keyed to any address it names (and get that address banned). It is
// called until it has decided, at the cost of a comparison: the server's
// trusted_proxies cannot be seen from a handler (Caddy clears the raw
// field once it has loaded it), so a forwarded request is what tells.
func (g *RobotsGuard) checkForwarded(srv *caddyhttp.Server, clientIP, remoteAddr string) {
	if srv.TrustedProxiesStrict != 0 || !g.addressKeyed {
		g.proxyChecked.Store(true)
		return
	}
	if clientIP == "" || strings.HasPrefix(remoteAddr, clientIP) && (len(remoteAddr) == len(clientIP) || remoteAddr[len(clientIP)] == ':') ||
		strings.HasPrefix(remoteAddr, "["+clientIP+"]") {
		return // not forwarded
	}
	if g.proxyChecked.Swap(true) {
		return
	}
	g.logger.Warn("robots_guard: trusted_proxies without trusted_proxies_strict: Caddy takes the leftmost forwarded address that is not a trusted proxy, which the client writes, so a client can have its Crawl-delay budget, traps and bans keyed to any address it names (and get that address banned), and have a crawler claim verified against an address it does not hold; set trusted_proxies_strict",
		zap.String("client_ip", clientIP), zap.String("peer", remoteAddr))
}

// provisionBans loads or makes the ban list of this Caddy instance (in
// memory, or in cfg's store), which every block checks and adds to: a
// client banned through one block is refused by all, whatever their
// options. Its size is the max_bans of the block that made it.
func (g *RobotsGuard) provisionBans(cfg guard.Config) (limit.Bans, error) {
	var key banListKey
	if cfg.Store != nil {
		b, err := json.Marshal(cfg.Store)
		if err != nil {
			return nil, fmt.Errorf("robots_guard: store: %w", err)
		}
		key.store = string(b)
	}
	v, _, err := pool.LoadOrNew(key, func() (caddy.Destructor, error) {
		if cfg.Store == nil {
			return &sharedBans{bans: limit.NewMemoryBans(cfg.Bans.MaxEntries)}, nil
		}
		log := newSwapCore()
		log.set(g.logger.Core())
		r, err := guard.NewStoreLimiter(cfg,
			guard.WithLogger(zap.New(log).Named("http.handlers.robots_guard")),
			guard.WithObserver(metricsObserver{}))
		if err != nil {
			return nil, err
		}
		return &sharedBans{bans: r.NewBans(cfg.Bans.MaxEntries), conn: r, log: log}, nil
	})
	if err != nil {
		return nil, err
	}
	g.bansKey = &key
	sb := v.(*sharedBans)
	if sb.log != nil {
		sb.log.set(g.logger.Core())
	}
	return sb.bans, nil
}

// trapLinkValue is the value of the {http.robots_guard.trap_link}
// placeholder: the path of the requesting client's own trap link, made
// when the placeholder is read (a template, a header), since its HMAC
// costs more than the rest of the decision.
type trapLinkValue struct {
	e              *guard.Engine
	site, clientIP string
	header         http.Header // the response's: a page that shows the link is the client's own
}

// String returns the link's path. The response that reads it is marked
// Cache-Control: private unless the route set a Cache-Control of its
// own: a shared cache that kept the page would show one client's link to
// others (who would be refused, not banned, but the trap would catch
// nobody).
func (t *trapLinkValue) String() string {
	link := t.e.TrapLinkFor(t.site, t.clientIP)
	if link != "" && t.header != nil && t.header.Get("Cache-Control") == "" {
		t.header.Set("Cache-Control", "private")
	}
	return link
}

// trapSecretKey is where the key of per-client trap links is kept in
// Caddy's storage.
const trapSecretKey = "robots_guard/trap_secret"

// trapSecret returns the key of per-client trap links from Caddy's
// storage, made (32 random bytes, hex) and stored the first time, under
// the storage's lock, so that the instances that share a storage share
// their links, and links survive restarts.
func trapSecret(ctx caddy.Context) ([]byte, error) {
	st := storageOf(ctx)
	if st == nil {
		return nil, nil // outside a real configuration: New makes one
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if b, err := st.Load(c, trapSecretKey); err == nil && len(b) >= 32 {
		return b, nil
	}
	if err := st.Lock(c, trapSecretKey); err != nil {
		return nil, fmt.Errorf("robots_guard: trap_secret: locking %s in storage: %w", trapSecretKey, err)
	}
	defer func() {
		// A context of its own: c may have run out.
		uc, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st.Unlock(uc, trapSecretKey)
	}()
	b, err := st.Load(c, trapSecretKey)
	switch {
	case err == nil && len(b) >= 32:
		return b, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("robots_guard: trap_secret: reading %s from storage: %w", trapSecretKey, err)
	case err == nil:
		return nil, fmt.Errorf("robots_guard: trap_secret: %s in storage holds %d bytes, fewer than 32; delete it to have a new one made, or set trap_secret", trapSecretKey, len(b))
	}
	k := make([]byte, 32)
	rand.Read(k)
	b = []byte(hex.EncodeToString(k))
	if err := st.Store(c, trapSecretKey, b); err != nil {
		return nil, fmt.Errorf("robots_guard: trap_secret: storing %s: %w", trapSecretKey, err)
	}
	return b, nil
}

// storageClocks keeps trap grace clocks in Caddy's storage (see
// traps.ClockStore), one key per site and trap, so that a restart
// goes on with them.
type storageClocks struct {
	st  certmagic.Storage
	log *zap.Logger
}

// trapClockKey is the storage key of a trap clock.
func trapClockKey(site, trap string) string {
	sum := sha256.Sum256([]byte(site + "\n" + trap))
	return "robots_guard/trap_clocks/" + hex.EncodeToString(sum[:16])
}

// LoadTrapClock implements traps.ClockStore. The value is two
// RFC 3339 times, since and confirmed; anything else is no clock.
func (s storageClocks) LoadTrapClock(site, trap string) (since, confirmed time.Time, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := s.st.Load(ctx, trapClockKey(site, trap))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("robots_guard: reading a trap's grace clock from storage", zap.String("site", site), zap.String("trap", trap), zap.Error(err))
		}
		return since, confirmed, false
	}
	a, c, found := strings.Cut(string(b), " ")
	since, err1 := time.Parse(time.RFC3339Nano, a)
	confirmed, err2 := time.Parse(time.RFC3339Nano, c)
	return since, confirmed, found && err1 == nil && err2 == nil
}

// StoreTrapClock implements traps.ClockStore.
func (s storageClocks) StoreTrapClock(site, trap string, since, confirmed time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v := since.UTC().Format(time.RFC3339Nano) + " " + confirmed.UTC().Format(time.RFC3339Nano)
	if err := s.st.Store(ctx, trapClockKey(site, trap), []byte(v)); err != nil {
		s.log.Warn("robots_guard: keeping a trap's grace clock in storage; a restart will wait traps.grace again", zap.String("site", site), zap.String("trap", trap), zap.Error(err))
	}
}

// DeleteTrapClock implements traps.ClockStore.
func (s storageClocks) DeleteTrapClock(site, trap string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.st.Delete(ctx, trapClockKey(site, trap)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("robots_guard: deleting a trap's grace clock from storage", zap.String("site", site), zap.String("trap", trap), zap.Error(err))
	}
}

// storageOf returns Caddy's storage, nil for a context that no
// configuration made (caddy.Context.Storage panics there: a test's).
func storageOf(ctx caddy.Context) (st certmagic.Storage) {
	defer func() {
		if recover() != nil {
			st = nil
		}
	}()
	return ctx.Storage()
}
