// One-off check (2026-11-27): identity.Sign's -01 output and SignLegacy's
// string form, verified by Cloudflare's newest verifiers on npm:
//
//   go run ./identity/testdata/webbotauth/interop/signdump > signed.json
//   npm install http-message-sig@0.3.0 web-bot-auth@0.1.3 && node verify-sign.mjs signed.json
import { verifySignature } from "http-message-sig";
import { verify as wbaVerify } from "web-bot-auth";
import { verifierFromJWK } from "web-bot-auth/crypto";
import fs from "fs";
import { webcrypto } from "crypto";

const { jwk, ...signed } = JSON.parse(fs.readFileSync(process.argv[2] || "signed.json", "utf8"));
const key = await webcrypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
const verifier = { algorithm: "ed25519", verify: (data, sig) => webcrypto.subtle.verify({ name: "Ed25519" }, key, sig, data) };
for (const [name, h] of Object.entries(signed)) {
  const req = new Request("https://example.com/page", {
    headers: { "Signature-Agent": h["signature-agent"], "Signature-Input": h["signature-input"], Signature: h["signature"] },
  });
  try {
    await verifySignature(req, {
      policy: { algorithms: ["ed25519"], requiredComponents: ["@authority"], requiredParameters: ["created", "expires", "keyid"], maxAge: 86400, clockSkew: 60 },
      resolveVerifier: () => verifier,
    });
    console.log(`http-message-sig 0.3.0, ${name}: verified`);
  } catch (e) {
    console.log(`http-message-sig 0.3.0, ${name}: FAILED ${e.message}`);
  }
  try {
    await wbaVerify(req, await verifierFromJWK(jwk));
    console.log(`web-bot-auth 0.1.3, ${name}: verified`);
  } catch (e) {
    console.log(`web-bot-auth 0.1.3, ${name}: FAILED ${e.message}`);
  }
}
