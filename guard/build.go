package guard

import (
	"errors"
	"fmt"

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
	d := identity.Deps{Storage: o.feedStore, Logger: o.logger, Now: o.now, TLS: o.storeTLSForAgents}
	if io, ok := o.observer.(identity.Observer); ok {
		d.Observer = io
	}
	v, err := cfg.Verify.NewVerifier(d)
	if err != nil {
		return nil, err
	}
	o.logger.Info("robots_guard: crawler verification on", zap.Stringer("registry", v), zap.String("on_spoofed", cfg.Verify.OnSpoofed))
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
	rc := sc.RedisConfig(cfg.CrawlDelay)
	rc.Logger, rc.TLS = o.logger, o.storeTLS
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
