// interop.mjs runs jose (the JOSE library of Node.js licence servers and
// verifiers, pinned in package.json) against robotsguard's licence tokens,
// for integration_test/rsl_interop_test.go. It works on loopback only.
//
//   node interop.mjs issue SITE OTHER
//     A licence server made with jose: it makes an ES256, an EdDSA and an
//     RS256 key (and an ES256 key it does not publish), serves the public
//     ones as a JWK Set at GET /key on 127.0.0.1 (a free port), and prints
//     one JSON line: {"jose": version, "url": its base URL, "tokens":
//     {name: JWT}}, tokens whose iss is that URL and whose aud is SITE (or
//     OTHER, or broken as their names say). It serves until its standard
//     input closes.
//
//   node interop.mjs verify < cases.json
//     A verifier made with jose: for each case {"name", "server", "token",
//     "audience"} of the JSON array on standard input, jwtVerify with the
//     key set at server + "/key" (createRemoteJWKSet), issuer server,
//     audience, algorithms ES256, EdDSA (also named Ed25519) and RS256, exp and aud required,
//     and 60 s of clock tolerance (what robotsguard's license.Verifier
//     asks). It prints {"jose": version, "results": [{"name", "valid",
//     "code"}]}, code being jose's error code of a refused token.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import {
  SignJWT,
  createRemoteJWKSet,
  exportJWK,
  generateKeyPair,
  jwtVerify,
} from "jose";

const joseVersion = JSON.parse(
  readFileSync(new URL("./node_modules/jose/package.json", import.meta.url), "utf8"),
).version;

const algorithms = ["ES256", "EdDSA", "Ed25519", "RS256"];

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

async function verify() {
  const cases = JSON.parse(await readStdin());
  const sets = new Map();
  const results = [];
  for (const c of cases) {
    if (!sets.has(c.server)) {
      sets.set(c.server, createRemoteJWKSet(new URL(c.server + "/key"), { timeoutDuration: 5000 }));
    }
    try {
      await jwtVerify(c.token, sets.get(c.server), {
        issuer: c.server,
        audience: c.audience,
        algorithms,
        requiredClaims: ["exp", "aud"],
        clockTolerance: 60,
      });
      results.push({ name: c.name, valid: true, code: "" });
    } catch (e) {
      results.push({ name: c.name, valid: false, code: (e.code || String(e)) + (e.claim ? ":" + e.claim : "") });
    }
  }
  process.stdout.write(JSON.stringify({ jose: joseVersion, results }) + "\n");
}

async function key(alg, kid) {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, use: "sig" };
  return { alg, kid, privateKey, jwk };
}

async function issue(site, other) {
  const es = await key("ES256", "jose-es256");
  const ed = await key("EdDSA", "jose-eddsa");
  const rs = await key("RS256", "jose-rs256");
  const unpublished = await key("ES256", "jose-unpublished");
  // The same Ed25519 key under RFC 9864's fully-specified name.
  const ed25519 = { ...ed, alg: "Ed25519", kid: "jose-ed25519", jwk: { ...ed.jwk, kid: "jose-ed25519" } };
  const published = [es, ed, rs, ed25519].map((k) => ({ ...k.jwk, alg: k.alg }));

  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/key") {
      res.writeHead(200, { "Content-Type": "application/jwk-set+json" });
      res.end(JSON.stringify({ keys: published }));
      return;
    }
    res.writeHead(404, { "Content-Type": "application/json" });
    res.end('{"error":"not_found"}');
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}`;

  const now = Math.floor(Date.now() / 1000);
  const sign = (k, claims) =>
    new SignJWT(claims).setProtectedHeader({ alg: k.alg, kid: k.kid, typ: "JWT" }).sign(k.privateKey);
  const base = { iss: url, aud: site, iat: now, exp: now + 3600 };
  const tokens = {
    "valid ES256": await sign(es, base),
    "valid EdDSA": await sign(ed, base),
    "valid RS256": await sign(rs, base),
    "audiences, one the site": await sign(es, { ...base, aud: [other, site] }),
    expired: await sign(es, { ...base, iat: now - 3 * 3600, exp: now - 2 * 3600 }),
    "for another site": await sign(es, { ...base, aud: other }),
    "another issuer": await sign(es, { ...base, iss: "https://issuer.invalid" }),
    "no exp": await sign(es, { iss: url, aud: site, iat: now }),
    "not yet valid": await sign(es, { ...base, nbf: now + 2 * 3600, exp: now + 3 * 3600 }),
    "unpublished key": await sign(unpublished, base),
    "alg Ed25519 (RFC 9864)": await sign(ed25519, base),
  };
  process.stdout.write(JSON.stringify({ jose: joseVersion, url, tokens }) + "\n");
  process.stdin.resume();
  process.stdin.on("end", () => server.close(() => process.exit(0)));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "verify") {
  await verify();
} else if (mode === "issue" && args.length === 2) {
  await issue(args[0], args[1]);
} else {
  process.stderr.write("usage: node interop.mjs verify < cases.json | node interop.mjs issue SITE OTHER\n");
  process.exit(2);
}
