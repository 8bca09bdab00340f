// Command signdump writes what identity.Sign (draft -01) and
// identity.SignLegacy write for a request to https://example.com/page,
// signed with the RFC 9421 Ed25519 test key, and the key's public JWK, as
// JSON on standard output, for verify-sign.mjs:
//
//	go run ./identity/testdata/webbotauth/interop/signdump > signed.json
package main

import (
	"encoding/json"
	"net/http"
	"os"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testkeys"
)

func main() {
	priv, err := identity.PrivateJWK(testkeys.PrivateJWK)
	if err != nil {
		panic(err)
	}
	out := map[string]any{"jwk": json.RawMessage(testkeys.PublicJWK)}
	now := time.Now()
	for _, legacy := range []bool{false, true} {
		sr := &identity.SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/page", Header: http.Header{}}
		sign, name := identity.Sign, "sign01"
		if legacy {
			sign, name = identity.SignLegacy, "legacy"
		}
		if err := sign(sr, priv, testkeys.Thumbprint, "https://signature-agent.test", now, now.Add(time.Hour), "bm9uY2U"); err != nil {
			panic(err)
		}
		out[name] = map[string]string{"signature-agent": sr.Header.Get("Signature-Agent"),
			"signature-input": sr.Header.Get("Signature-Input"), "signature": sr.Header.Get("Signature")}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.Encode(out)
}
