package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/freeport"
	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestSchemeThatDoesNotMatchThePort checks that iwctl against a Redis
// port of the other kind fails within seconds, naming the address (never
// the password) and what went wrong, rather than waiting about 51 s for
// "context deadline exceeded" (rediss:// at a plain Redis) or saying only
// "EOF" (redis:// at a TLS-only port).
func TestSchemeThatDoesNotMatchThePort(t *testing.T) {
	const password = "s3cret-pw"
	plain := redistest.Start(t)
	tlsPort := freeport.Port(t)
	cert, key := selfSignedCert(t)
	// The server keeps its plain port, which redistest waits on; the test
	// dials only its TLS port.
	redistest.Start(t, "tls-port "+strconv.Itoa(tlsPort), "tls-cert-file "+cert, "tls-key-file "+key, "tls-auth-clients no")
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort))
	corpus := filepath.Join("..", "..", "content")
	testCases := []struct {
		desc    string
		url     string
		failErr string
	}{
		{desc: "rediss:// at a plain Redis", url: "rediss://:" + password + "@" + plain.Addr() + "/0",
			failErr: "redis at " + plain.Addr() + " did not complete a TLS handshake within 5s: IW_REDIS_URL is rediss:// (TLS); check its scheme and port"},
		{desc: "redis:// at a TLS-only port", url: "redis://:" + password + "@" + tlsAddr + "/0",
			failErr: "redis at " + tlsAddr + " closed the connection without answering PING: IW_REDIS_URL is redis:// (no TLS); check its scheme and port"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Setenv("IW_REDIS_URL", tc.url)
			// Bounded, so that a wait fails here rather than after go-redis's.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			checkCommand(ctx, t, []string{"sync", corpus}, nil, "", tc.failErr, password)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("failed after %s; want within a few seconds", took.Round(time.Millisecond))
			}
		})
	}
}

// selfSignedCert writes a self-signed certificate for 127.0.0.1 and its
// key, as PEM files redis-server reads, and returns their paths.
func selfSignedCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generating a key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatalf("creating a certificate: %v", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatalf("encoding the key: %v", err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: pkcs8}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatalf("writing %s: %v", file, err)
		}
	}
	return certFile, keyFile
}
