// Package testkeys holds the RFC 9421 Appendix B.1.4 Ed25519 test key as a
// JWK (rfc9421-test-key-ed25519.json, copied from cloudflare/web-bot-auth,
// Apache-2.0; see identity/testdata/webbotauth/SOURCES.md), for the tests
// that sign Web Bot Auth requests and serve key directories.
package testkeys

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// PrivateJWK is the key with its private member "d".
//
//go:embed rfc9421-test-key-ed25519.json
var PrivateJWK []byte

// PublicJWK is the key without its private member, as a key directory
// serves it.
var PublicJWK = func() []byte {
	var m map[string]any
	if err := json.Unmarshal(PrivateJWK, &m); err != nil {
		panic(err)
	}
	delete(m, "d")
	b, _ := json.Marshal(m)
	return b
}()

// Thumbprint is the key's RFC 7638 thumbprint, its key id.
const Thumbprint = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"

// DirectoryServer serves the public key as a Web Bot Auth key directory
// (a JWKS at the well-known path) over TLS on loopback until the test ends,
// and counts the directory fetches.
func DirectoryServer(t testing.TB) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/http-message-signatures-directory" {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		w.Header().Set("Content-Type", "application/http-message-signatures-directory+json")
		w.Header().Set("Cache-Control", "max-age=600")
		fmt.Fprintf(w, `{"keys":[%s]}`, PublicJWK)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}
