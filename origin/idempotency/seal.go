package idempotency

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/token"
)

// ClientAddressHeader carries the client's address from the edge, which
// sets it from its own view of the client ({client_ip}, through its
// trusted proxies) and overwrites whatever the client sent. The origin is
// reachable only from the edge.
const ClientAddressHeader = "X-Invoicewire-Client-Ip"

// clientOf names the client a record belongs to: the authenticated client
// when the route has one, else the bearer token presented (by its hash)
// when it is a live access token, else the client's address (IPv6 by /64,
// as the rate limiter groups it). On the public writes (register, claim,
// revoke) the edge passes any bearer string without checking it, so a
// string that is no live token ("Bearer undefined", a placeholder copied
// from an example, an expired token) names nobody: scoped by it, clients at
// different addresses sending the same one with the same key and body would
// share their answers, credentials included (docs/decisions.md,
// "Idempotency records belong to a client").
func (s *Store) clientOf(r *http.Request, authenticated func(*http.Request) string) (string, error) {
	if authenticated != nil {
		if c := authenticated(r); c != "" {
			return "client:" + c, nil
		}
	}
	if raw, present := token.FromHeader(r.Header); present && raw != "" {
		_, err := token.Lookup(r.Context(), s.rdb, raw, time.Now())
		switch {
		case err == nil:
			return "token:" + token.Hash(raw), nil
		case !errors.Is(err, token.ErrInvalid):
			return "", fmt.Errorf("idempotency: looking up the bearer token: %w", err)
		}
	}
	ip := r.Header.Get(ClientAddressHeader)
	if ip == "" {
		ip, _, _ = net.SplitHostPort(r.RemoteAddr)
	}
	if a, err := netip.ParseAddr(strings.TrimSpace(ip)); err == nil {
		a = a.Unmap()
		if a.Is6() {
			p, _ := a.Prefix(64)
			return "addr:" + p.String(), nil
		}
		return "addr:" + a.String(), nil
	}
	return "addr:" + ip, nil
}

// secretOf is the input keying material a stored answer is sealed under:
// what a retry carries and Redis does not (the key and the body appear
// there only through one-way digests).
func secretOf(client, route, key string, body []byte) []byte {
	b := make([]byte, 0, len(client)+len(route)+len(key)+len(body)+3)
	b = append(b, client...)
	b = append(b, 0)
	b = append(b, route...)
	b = append(b, 0)
	b = append(b, key...)
	b = append(b, 0)
	return append(b, body...)
}

const sealInfo = "invoicewire idempotency record v1"

// seal encrypts a with AES-256-GCM under a key derived (HKDF-SHA256, RFC
// 5869) from secret and a fresh random salt.
func seal(secret []byte, a answer) (salt, sealed []byte, err error) {
	plain, err := json.Marshal(a)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the answer: %w", err)
	}
	salt = make([]byte, 16)
	rand.Read(salt)
	aead, err := aeadFor(secret, salt)
	if err != nil {
		return nil, nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return salt, aead.Seal(nonce, nonce, plain, nil), nil
}

// open decrypts what seal sealed.
func open(secret, salt, sealed []byte) (answer, error) {
	var a answer
	aead, err := aeadFor(secret, salt)
	if err != nil {
		return a, err
	}
	if len(sealed) < aead.NonceSize() {
		return a, errors.New("the sealed answer is truncated")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	if err != nil {
		return a, fmt.Errorf("decrypting: %w", err)
	}
	if err := json.Unmarshal(plain, &a); err != nil {
		return a, fmt.Errorf("decoding: %w", err)
	}
	return a, nil
}

func aeadFor(secret, salt []byte) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, secret, salt, sealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving the record key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
