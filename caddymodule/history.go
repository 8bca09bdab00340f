package caddymodule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/sites"
)

// storageHistory keeps the robots.txt version histories of the
// configured sites in Caddy's storage (sites.HistoryStore), one key per
// site: at most 20 versions and 1 MiB of text each, for
// the sites the configuration names.
type storageHistory struct {
	st  certmagic.Storage
	log *zap.Logger
}

// historyKey is the storage key of a site's history.
func historyKey(site string) string {
	sum := sha256.Sum256([]byte(site))
	return "robots_guard/history/" + hex.EncodeToString(sum[:16])
}

// LoadHistory implements sites.HistoryStore.
func (s storageHistory) LoadHistory(site string) ([]sites.Version, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := s.st.Load(ctx, historyKey(site))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("robots_guard: reading a site's robots.txt history from storage", zap.String("site", site), zap.Error(err))
		}
		return nil, false
	}
	var h []sites.Version
	if err := json.Unmarshal(b, &h); err != nil {
		s.log.Warn("robots_guard: a site's robots.txt history in storage cannot be read; starting a new one", zap.String("site", site), zap.Error(err))
		return nil, false
	}
	return h, true
}

// StoreHistory implements sites.HistoryStore.
func (s storageHistory) StoreHistory(site string, h []sites.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := json.Marshal(h)
	if err == nil {
		err = s.st.Store(ctx, historyKey(site), b)
	}
	if err != nil {
		s.log.Warn("robots_guard: keeping a site's robots.txt history in storage; a restart starts it anew", zap.String("site", site), zap.Error(err))
	}
}

// handleHistory serves the robots.txt version history of every cached
// site (or of ?site=), texts included: what "caddy robots audit
// --address" judges past requests by.
func (AdminAPI) handleHistory(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use GET")
	}
	out := map[string][]sites.Version{}
	for _, e := range enforcers() {
		for site, h := range e.History(r.URL.Query().Get("site")) {
			if len(h) > len(out[site]) {
				out[site] = h
			}
		}
	}
	return writeJSON(w, out)
}
