// Signs requests with Cloudflare's reference signer (npm web-bot-auth),
// writing vectors in the shape of testdata/webbotauth/web_bot_auth_architecture_v*.json.
// Run (in this directory): npm install && node sign.mjs ../rfc9421-test-key-ed25519.json rsa-key.json > ../web_bot_auth_interop_cloudflare.json
// where rsa-key.json is the RSA-PSS vector of ../web_bot_auth_architecture_v2.json (its "key" member read).
import { signatureHeaders } from "web-bot-auth";
import { signerFromJWK } from "web-bot-auth/crypto";
import { readFileSync } from "node:fs";

const ed25519 = JSON.parse(readFileSync(process.argv[2]));
const rsa = JSON.parse(readFileSync(process.argv[3])).key;
const created = new Date("2026-11-24T00:00:00Z");
const expires = new Date(created.getTime() + 3600_000);
const agent = '"https://signature-agent.test"';
const cases = [
  { key: ed25519, url: "https://example.com/", components: ["@authority"] },
  { key: ed25519, url: "https://example.com/", components: ["@authority", "signature-agent"], agent },
  { key: ed25519, url: "https://example.com/path/page?a=1&b=two", components: ["@target-uri"] },
  { key: ed25519, url: "https://example.com/path/page?a=1", components: ["@target-uri", "signature-agent"], agent },
  { key: ed25519, url: "http://example.com:8080/x?q", components: ["@target-uri"] },
  { key: ed25519, url: "http://example.com:8080/x", components: ["@authority", "@path"] },
  { key: rsa, url: "https://example.com/rsa?x=y", components: ["@target-uri", "signature-agent"], agent },
  { key: rsa, url: "https://example.com/rsa", components: ["@authority"] },
];
const out = [];
for (const c of cases) {
  const headers = c.agent ? { "Signature-Agent": c.agent } : {};
  const req = new Request(c.url, { headers });
  const h = await signatureHeaders(req, await signerFromJWK(c.key), { created, expires, components: c.components });
  out.push({
    key: c.key,
    target_url: c.url,
    created_ms: created.getTime(),
    expires_ms: expires.getTime(),
    label: h["Signature-Input"].split("=")[0],
    signature: h["Signature"],
    signature_input: h["Signature-Input"],
    signature_agent: c.agent ?? "",
  });
}
console.log(JSON.stringify(out, null, 2));
