package limit

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// StoreObserver receives one call per decision that involved the store,
// for metrics: the outcome and, for calls made, their latency.
type StoreObserver interface {
	ObserveStoreCall(outcome string, d time.Duration)
}

// RedisConfig configures a Redis limiter.
type RedisConfig struct {
	// URL is a redis:// or rediss:// (TLS) URL, with the password and
	// database number if any: redis://:secret@10.0.0.5:6379/2.
	URL string
	// KeyPrefix starts every key, so that several sites or apps can share
	// one server. Default "robots_guard:".
	KeyPrefix string
	// Timeout bounds one decision's round trip. Default 50ms.
	Timeout time.Duration
	// OnError is what a request gets when its call fails: OnErrorAllow
	// (the default) or OnErrorDeny.
	OnError string
	// Tolerance is the fraction of the Crawl-delay a request may come
	// early (see Tolerance).
	Tolerance float64
	// LocalKeys caps the keys of the local limiter that decides while the
	// store is paused, and of the local "deny until" cache. Default 100000.
	LocalKeys int
	// Logger receives the store's state changes and failures, sampled.
	Logger *zap.Logger
	// Observer receives call outcomes.
	Observer StoreObserver
	// TLS replaces the TLS configuration of a rediss:// URL (which
	// otherwise trusts the system's roots), for a private CA.
	TLS *tls.Config
	// Cluster makes URL a Redis Cluster (or Valkey cluster): go-redis's
	// cluster URL form, redis://host1:port?addr=host2:port&addr=host3:port,
	// any of whose nodes lets the client discover the others. Bans are
	// then announced through sharded pub/sub (SPUBLISH, Redis 7+).
	Cluster bool
	// clientClock sends the caller's clock to the script instead of the
	// server's TIME: for tests that compare the script with Memory on
	// the same arrival sequences.
	clientClock bool
	// banSync, when set, replaces syncEvery (tests).
	banSync time.Duration
}

// RedactURL returns u with its password replaced by "xxxxx", for logs and
// errors, even when u does not parse.
func RedactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return scrub(u, u)
}

// password returns the password of the userinfo of u ("scheme://user:pw@host"),
// found by hand so that it works on URLs that do not parse.
func password(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
		return rest[c+1 : at]
	}
	return ""
}

// scrub replaces the password of u in s.
func scrub(s, u string) string {
	if pw := password(u); pw != "" {
		s = strings.ReplaceAll(s, pw, "xxxxx")
	}
	return s
}

// CheckRedisURL checks the form of a store URL: redis:// or rediss:// with
// a host. Its error never contains the password.
func CheckRedisURL(u string) error {
	if !strings.Contains(u, "://") {
		r := u // without the password, as RedactURL does for URLs
		if at := strings.LastIndexByte(u, '@'); at >= 0 {
			if c := strings.IndexByte(u[:at], ':'); c >= 0 {
				r = u[:c+1] + "xxxxx" + u[at:]
			}
		}
		return fmt.Errorf("%s: no scheme: write it as redis://%s (rediss:// for TLS; redis://[:password@]host:port[/db])", r, r)
	}
	if _, err := url.Parse(u); err != nil {
		// url.Parse quotes pieces of the URL, a password's included.
		return fmt.Errorf("%s: not a valid URL (percent-encode special characters of the password)", RedactURL(u))
	}
	if _, err := redis.ParseURL(u); err != nil {
		if _, cerr := redis.ParseClusterURL(u); cerr == nil && strings.Contains(u, "addr=") {
			return fmt.Errorf("%s: a cluster's URL (addr=...): add cluster to the store (JSON \"cluster\": true)", RedactURL(u))
		}
		return fmt.Errorf("%s: %s (want redis://[:password@]host:port[/db] or rediss://...)", RedactURL(u), scrub(err.Error(), u))
	}
	return nil
}

// CheckKeyPrefix refuses a key prefix with '{' or '}': keys carry hash
// tags after it, and a brace in the prefix would make Redis Cluster hash
// the prefix instead (every key on one slot, or the ban script's keys on
// different ones).
func CheckKeyPrefix(p string) error {
	if strings.ContainsAny(p, "{}") {
		return fmt.Errorf("key_prefix: %q must not contain '{' or '}' (the keys' hash tags follow it)", p)
	}
	return nil
}

// CheckStoreURL checks the URL of a server (CheckRedisURL) or, with
// cluster, of a cluster. Its error never contains the password.
func CheckStoreURL(u string, cluster bool) error {
	if cluster {
		_, err := checkClusterURL(u)
		return err
	}
	return CheckRedisURL(u)
}

// checkClusterURL checks the form of a cluster's URL (ParseClusterURL's:
// redis://host:port?addr=host:port&addr=...). Its error never contains
// the password.
func checkClusterURL(u string) (*redis.ClusterOptions, error) {
	if !strings.Contains(u, "://") {
		return nil, CheckRedisURL(u) // says how to write it
	}
	if _, err := url.Parse(u); err != nil {
		return nil, fmt.Errorf("%s: not a valid URL (percent-encode special characters of the password)", RedactURL(u))
	}
	opt, err := redis.ParseClusterURL(u)
	if err != nil {
		return nil, fmt.Errorf("%s: %s (want redis://[:password@]host:port?addr=host:port&addr=... for a cluster)", RedactURL(u), scrub(err.Error(), u))
	}
	return opt, nil
}

// redactErr hides the URL's password in err's text, should a library
// quote it.
func redactErr(err error, u string) error {
	if pw := password(u); pw != "" && strings.Contains(err.Error(), pw) {
		return errors.New(scrub(err.Error(), u))
	}
	return err
}
