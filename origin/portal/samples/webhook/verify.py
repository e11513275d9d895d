import hashlib
import hmac


def verify(raw_body: bytes, header: str, secret: bytes) -> bool:
    """Check X-Invoicewire-Signature: sha256=<lowercase hex HMAC-SHA256>."""
    if not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len("sha256="):])


# In an http.server handler:
#   body = self.rfile.read(int(self.headers["Content-Length"]))
#   ok = verify(body, self.headers.get("X-Invoicewire-Signature", ""), SECRET)
