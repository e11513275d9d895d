const crypto = require("node:crypto");

// rawBody is a Buffer of the request body exactly as received.
function verify(rawBody, header, secret) {
  if (typeof header !== "string" || !header.startsWith("sha256=")) return false;
  const expected = crypto.createHmac("sha256", secret).update(rawBody).digest();
  const got = Buffer.from(header.slice("sha256=".length), "hex");
  return got.length === expected.length && crypto.timingSafeEqual(got, expected);
}

module.exports = { verify };
