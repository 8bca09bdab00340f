package guard

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
)

// NewVerifier returns the crawler verifier that New builds for cfg.Verify
// (nil, nil when it is off), with the logger, observer and feed storage of
// opts. Front ends that keep the verifier's feeds and DNS cache across
// configuration changes build one and hand it to each new Engine with
// WithVerifier; they close it themselves.
func NewVerifier(cfg Config, opts ...Option) (*identity.Verifier, error) {
	cfg, err := cfg.withDefaults()
	if err != nil || !cfg.Verifying() {
		return nil, err
	}
	return newVerifier(cfg, collect(opts))
}

// collect applies opts to the defaults.
func collect(opts []Option) options {
	o := options{logger: zap.NewNop()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func newVerifier(cfg Config, o options) (*identity.Verifier, error) {
	vc := cfg.Verify
	ic := identity.Config{
		Operators:  vc.Registry(),
		Refresh:    time.Duration(vc.Refresh),
		DNSTimeout: time.Duration(vc.DNSTimeout),
		Resolver:   vc.Resolver,
		CacheSize:  vc.DNSCacheSize,
		Storage:    o.feedStore,
		Logger:     o.logger,
		Now:        o.now,
		OnDemand:   vc.FetchFeeds == FeedsOnDemand,
	}
	if w := vc.WebBotAuth; w != nil {
		wc := &identity.WebBotAuthConfig{Discover: w.Discover, MaxWindow: time.Duration(w.MaxWindow), AllowPrivate: w.AllowPrivateDirectories, TLS: o.storeTLSForAgents}
		if w.CAFile != "" && wc.TLS == nil {
			pem, err := os.ReadFile(w.CAFile)
			if err != nil {
				return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: ca_file: %s holds no PEM certificate", w.CAFile)
			}
			wc.TLS = &tls.Config{RootCAs: pool}
		}
		for _, a := range w.Agents {
			ag := identity.Agent{Origin: a.Origin, Operator: a.Operator}
			for _, f := range a.Keys {
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: agent %s: key: %w", a.Origin, err)
				}
				k, err := identity.ParseJWK(b)
				if err != nil {
					return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: agent %s: key %s: %w", a.Origin, f, err)
				}
				ag.Keys = append(ag.Keys, k)
			}
			wc.Agents = append(wc.Agents, ag)
		}
		ic.WebBotAuth = wc
	}
	if ic.Storage == nil && vc.CacheDir != "" {
		ic.Storage = identity.DirStorage(vc.CacheDir)
	}
	if io, ok := o.observer.(identity.Observer); ok {
		ic.Observer = io
	}
	v, err := identity.New(ic)
	if err != nil {
		return nil, fmt.Errorf("robots_guard: verify: %w", err)
	}
	o.logger.Info("robots_guard: crawler verification on", zap.Stringer("registry", v), zap.String("on_spoofed", vc.OnSpoofed))
	return v, nil
}

// NewStoreLimiter returns the limiter that New builds for cfg.Store: a
// limit.Redis with the logger and observer of opts (an Observer that also
// implements limit.StoreObserver gets the store's call outcomes). Front
// ends that keep it across configuration changes hand it to each new
// Engine with WithLimiter and close it themselves. It is an error to
// call it without cfg.Store.
func NewStoreLimiter(cfg Config, opts ...Option) (*limit.Redis, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		return nil, errors.New("robots_guard: store: not configured")
	}
	return newStoreLimiter(cfg, collect(opts))
}

func newStoreLimiter(cfg Config, o options) (*limit.Redis, error) {
	sc := cfg.Store
	rc := limit.RedisConfig{
		URL:       sc.Redis,
		Cluster:   sc.Cluster,
		KeyPrefix: sc.KeyPrefix,
		Timeout:   time.Duration(sc.Timeout),
		OnError:   sc.OnStoreError,
		Tolerance: *cfg.CrawlDelay.Tolerance,
		LocalKeys: cfg.CrawlDelay.MaxKeys,
		Logger:    o.logger,
		TLS:       o.storeTLS,
	}
	if so, ok := o.observer.(limit.StoreObserver); ok {
		rc.Observer = so
	}
	r, err := limit.NewRedis(rc)
	if err != nil {
		return nil, fmt.Errorf("robots_guard: store: %w", err)
	}
	o.logger.Info("robots_guard: Crawl-delay clocks shared through a store", zap.Stringer("store", r), zap.String("on_store_error", sc.OnStoreError))
	return r, nil
}

// NewLimiter returns the in-memory Crawl-delay limiter that New builds for
// cfg (cfg.CrawlDelay.MaxKeys keys, cfg.CrawlDelay.Tolerance), or the error that names
// cfg's first invalid field. Front ends that keep the limiter's clocks
// across configuration changes build one and hand it to each new Engine
// with WithLimiter.
func NewLimiter(cfg Config) (*limit.Memory, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return limit.NewMemory(cfg.CrawlDelay.MaxKeys, *cfg.CrawlDelay.Tolerance), nil
}
