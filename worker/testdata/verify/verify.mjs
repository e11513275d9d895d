// Independent verification of one captured webhook delivery, run by the
// worker's tests. It uses other people's implementations on purpose:
//   - RFC 9421 HTTP Message Signatures: the http-message-signatures package,
//     with the public key taken from the signatures directory (a JWKS);
//   - Standard Webhooks: the standardwebhooks package;
//   - X-Invoicewire-Signature and Content-Digest: Node's crypto, the way a
//     receiver would check them by hand.
// Usage: node verify.mjs capture.json   (exit 0 when every check passes)
import { readFileSync } from 'node:fs';
import { createHash, createHmac, createPublicKey, timingSafeEqual, verify } from 'node:crypto';
import { httpbis } from 'http-message-signatures';
import { Webhook } from 'standardwebhooks';

const c = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const body = Buffer.from(c.body_b64, 'base64');
const h = Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k.toLowerCase(), v]));
const fail = (msg) => { console.error(msg); process.exit(1); };

// Content-Digest (RFC 9530).
const digest = 'sha-256=:' + createHash('sha256').update(body).digest('base64') + ':';
if (h['content-digest'] !== digest) fail(`content-digest mismatch: ${h['content-digest']} != ${digest}`);

// X-Invoicewire-Signature: sha256=<hex HMAC of the raw body>.
const mac = 'sha256=' + createHmac('sha256', Buffer.from(c.secret, 'utf8')).update(body).digest('hex');
const got = Buffer.from(h['x-invoicewire-signature'] ?? '');
if (got.length !== mac.length || !timingSafeEqual(got, Buffer.from(mac))) fail('x-invoicewire-signature mismatch');

// Standard Webhooks: a whsec_ secret is base64; any other secret's bytes are the key.
const swSecret = c.secret.startsWith('whsec_') ? c.secret : Buffer.from(c.secret, 'utf8').toString('base64');
try {
  new Webhook(swSecret).verify(body.toString('utf8'), {
    'webhook-id': h['webhook-id'], 'webhook-timestamp': h['webhook-timestamp'], 'webhook-signature': h['webhook-signature'],
  });
} catch (e) { fail('standard webhooks: ' + e.message); }

// RFC 9421 against the key directory.
const keys = c.jwks.keys;
const ok = await httpbis.verifyMessage({
  requiredFields: ['@authority', 'content-digest', 'webhook-id', 'webhook-timestamp', 'signature-agent'],
  requiredParams: ['created', 'expires', 'keyid', 'alg'],
  keyLookup: async (params) => {
    const jwk = keys.find((k) => k.kid === params.keyid);
    if (!jwk) return null;
    const pub = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
    return { id: jwk.kid, algs: ['ed25519'], verify: async (data, sig) => verify(null, data, pub, sig) };
  },
}, { method: c.method, url: c.url, headers: c.headers }).catch((e) => fail('rfc 9421: ' + e.message));
if (ok !== true) fail('rfc 9421: signature did not verify');
console.log('ok');
