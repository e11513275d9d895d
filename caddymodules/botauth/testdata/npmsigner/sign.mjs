// Signs GET requests with Cloudflare's web-bot-auth package and sends them,
// printing one JSON line per response with its status and headers.
//
//   node sign.mjs <url> <signature-agent value> <private JWK JSON> [count]
//
// Each request gets a fresh signature (new created and nonce), as agents
// sign; the Signature-Agent value is sent as given, and web-bot-auth covers
// @authority and signature-agent.
import { signatureHeaders } from "web-bot-auth";
import { signerFromJWK } from "web-bot-auth/crypto";

const [url, agent, jwk, count = "1"] = process.argv.slice(2);
const signer = await signerFromJWK(JSON.parse(jwk));
for (let i = 0; i < Number(count); i++) {
  const headers = { "Signature-Agent": agent };
  const now = new Date();
  const signed = await signatureHeaders(new Request(url, { headers }), signer, {
    created: now,
    expires: new Date(now.getTime() + 300_000),
  });
  const resp = await fetch(url, {
    headers: { ...headers, Signature: signed["Signature"], "Signature-Input": signed["Signature-Input"] },
  });
  await resp.arrayBuffer();
  console.log(JSON.stringify({ status: resp.status, headers: Object.fromEntries(resp.headers) }));
}
