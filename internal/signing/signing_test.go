package signing_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/signing"
)

// RFC 9421 Appendix B.1.4, test-key-ed25519: the private key's seed (the
// "d" of its JWK) and its public key ("x").
const (
	rfcSeed   = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU"
	rfcPublic = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"
)

// rfcRequest is the test request of RFC 9421 Appendix B.2.
func rfcRequest(t *testing.T) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", "http://example.com/foo?param=Value&Pet=dog", strings.NewReader(`{"hello": "world"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Date", "Tue, 20 Apr 2021 02:07:55 GMT")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Length", "18")
	return req
}

func rfcKey(t *testing.T) *signing.Key {
	t.Helper()
	k, err := signing.ParseSeed(rfcSeed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRFC9421Ed25519Vector reproduces Appendix B.2.6 exactly: Ed25519 is
// deterministic, so the same key and signature base must give the RFC's
// bytes, and the RFC's signature must verify.
func TestRFC9421Ed25519Vector(t *testing.T) {
	const (
		wantInput = `sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`
		wantSig   = `sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:`
		wantBase  = "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n" +
			"\"@method\": POST\n" +
			"\"@path\": /foo\n" +
			"\"@authority\": example.com\n" +
			"\"content-type\": application/json\n" +
			"\"content-length\": 18\n" +
			"\"@signature-params\": (\"date\" \"@method\" \"@path\" \"@authority\" \"content-type\" \"content-length\");created=1618884473;keyid=\"test-key-ed25519\""
	)
	k := rfcKey(t)
	if got := base64.RawURLEncoding.EncodeToString(k.Public()); got != rfcPublic {
		t.Fatalf("public key %s, want the RFC's %s", got, rfcPublic)
	}
	comps := signing.Components("date", "@method", "@path", "@authority", "content-type", "content-length")
	params := signing.Params{Created: time.Unix(1618884473, 0), KeyID: "test-key-ed25519"}

	t.Run("sign", func(t *testing.T) {
		req := rfcRequest(t)
		if err := k.SignRequest(req, "sig-b26", comps, params); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get("Signature-Input"); got != wantInput {
			t.Errorf("Signature-Input\n got %s\nwant %s", got, wantInput)
		}
		if got := req.Header.Get("Signature"); got != wantSig {
			t.Errorf("Signature\n got %s\nwant %s", got, wantSig)
		}
	})
	t.Run("signature base", func(t *testing.T) {
		got, err := signing.SignatureBase(signing.Message{Request: rfcRequest(t)}, comps, params)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != wantBase {
			t.Errorf("\n got %q\nwant %q", got, wantBase)
		}
	})
	t.Run("verify the RFC's own headers", func(t *testing.T) {
		req := rfcRequest(t)
		req.Header.Set("Signature-Input", wantInput)
		req.Header.Set("Signature", wantSig)
		v, err := signing.VerifyRequest(req, "sig-b26", ed25519.PublicKey(k.Public()), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if v.Params.KeyID != "test-key-ed25519" || !v.Covers(signing.Component{Name: "@authority"}) {
			t.Errorf("verified %+v", v)
		}
	})
	t.Run("a changed component fails", func(t *testing.T) {
		req := rfcRequest(t)
		req.Header.Set("Signature-Input", wantInput)
		req.Header.Set("Signature", wantSig)
		req.Header.Set("Content-Type", "text/plain")
		if _, err := signing.VerifyRequest(req, "sig-b26", k.Public(), time.Now()); err == nil {
			t.Fatal("a tampered request verified")
		}
	})
}

// TestThumbprint checks RFC 7638 on the RFC 9421 test key (the value the
// Web Bot Auth drafts use for it) and the JWK built around it.
func TestThumbprint(t *testing.T) {
	k := rfcKey(t)
	const want = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"
	if k.ID != want {
		t.Errorf("thumbprint %s, want %s", k.ID, want)
	}
	j := k.JWK()
	if j.Kty != "OKP" || j.Crv != "Ed25519" || j.X != rfcPublic || j.Kid != want {
		t.Errorf("JWK %+v", j)
	}
	pub, err := j.PublicKey()
	if err != nil || !pub.Equal(k.Public()) {
		t.Errorf("JWK round trip: %v", err)
	}
}

// TestResponseSignature signs a response the way the signatures directory
// does — ("@authority";req "content-digest") — and checks what breaks it.
func TestResponseSignature(t *testing.T) {
	k, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"keys":[]}`)
	req, _ := http.NewRequest("GET", "https://news.example/.well-known/http-message-signatures-directory", nil)
	now := time.Now().Truncate(time.Second)
	comps := []signing.Component{{Name: "@authority", Req: true}, {Name: "content-digest"}}
	p := signing.Params{Created: now, Expires: now.Add(time.Hour), KeyID: k.ID, Alg: signing.Alg, Tag: "http-message-signatures-directory"}

	signed := func() http.Header {
		h := http.Header{}
		h.Set("Content-Digest", signing.ContentDigest(body))
		if err := k.SignResponse(signing.Message{Request: req, Status: 200, Header: h}, "binding0", comps, p); err != nil {
			t.Fatal(err)
		}
		return h
	}
	testCases := []struct {
		desc    string
		mutate  func(h http.Header, r *http.Request) (*http.Request, time.Time)
		wantErr string
	}{
		{desc: "as signed", mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) { return r, now }},
		{desc: "another authority", wantErr: "does not verify", mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) {
			r2, _ := http.NewRequest("GET", "https://evil.example/.well-known/http-message-signatures-directory", nil)
			return r2, now
		}},
		{desc: "default port is not part of the authority", mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) {
			r2, _ := http.NewRequest("GET", "https://news.example:443/.well-known/http-message-signatures-directory", nil)
			return r2, now
		}},
		{desc: "another digest", wantErr: "does not verify", mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) {
			h.Set("Content-Digest", signing.ContentDigest([]byte("other")))
			return r, now
		}},
		{desc: "expired", wantErr: "expired", mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) {
			return r, now.Add(2 * time.Hour)
		}},
		{desc: "missing label", wantErr: `Signature has no member "other"`, mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) {
			h.Set("Signature-Input", strings.Replace(h.Get("Signature-Input"), "binding0=", "other=", 1))
			return r, now
		}},
		{desc: "garbage header", wantErr: "malformed", mutate: func(h http.Header, r *http.Request) (*http.Request, time.Time) {
			h.Set("Signature", "binding0=(((")
			return r, now
		}},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			h := signed()
			r, at := tc.mutate(h, req)
			v, err := signing.Verify(signing.Message{Request: r, Status: 200, Header: h}, "binding0", k.Public(), at)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v.Params.Tag != "http-message-signatures-directory" || v.Params.KeyID != k.ID {
					t.Errorf("params %+v", v.Params)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	t.Run("signature input serialization", func(t *testing.T) {
		got := signed().Get("Signature-Input")
		want := `binding0=("@authority";req "content-digest");created=` + itoa(now.Unix()) + `;expires=` + itoa(now.Add(time.Hour).Unix()) +
			`;keyid="` + k.ID + `";alg="ed25519";tag="http-message-signatures-directory"`
		if got != want {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestContentDigest(t *testing.T) {
	// RFC 9530 Appendix B.1: {"hello": "world"} with SHA-256.
	body := []byte(`{"hello": "world"}`)
	const want = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
	if got := signing.ContentDigest(body); got != want {
		t.Errorf("ContentDigest %s, want %s", got, want)
	}
	testCases := []struct {
		desc    string
		value   string
		wantErr bool
	}{
		{desc: "sha-256 matches", value: want},
		{desc: "sha-512 of RFC 9530 B.1", value: "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:"},
		{desc: "unknown algorithm only", value: "md5=:AAAA:", wantErr: true},
		{desc: "wrong digest", value: "sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:", wantErr: true},
		{desc: "not a dictionary", value: "(((", wantErr: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			err := signing.VerifyContentDigest([]string{tc.value}, body)
			if (err != nil) != tc.wantErr {
				t.Errorf("err %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestParseSeed(t *testing.T) {
	testCases := []struct {
		desc    string
		in      string
		wantErr bool
	}{
		{desc: "base64url without padding", in: rfcSeed},
		{desc: "standard base64 with padding", in: "n4Ni+HpISpVObnQMW0wOhCKROaIKqKtW/2ZYb2p9KcU="},
		{desc: "surrounding whitespace", in: "  " + rfcSeed + "\n"},
		{desc: "too short", in: "AAAA", wantErr: true},
		{desc: "not base64", in: "not a key!", wantErr: true},
		{desc: "empty", in: "", wantErr: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			k, err := signing.ParseSeed(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && base64.RawURLEncoding.EncodeToString(k.Public()) != rfcPublic {
				t.Error("a different key")
			}
		})
	}
}

// TestSourceSharesOneKey starts many sources at once against one real Redis:
// SET NX lets one generated key in, and every source serves that one.
func TestSourceSharesOneKey(t *testing.T) {
	rdb := redistest.New(t).Client()
	ctx := context.Background()
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			k, err := signing.NewSource(rdb, "").Key(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("sources disagree: %v", ids)
		}
	}
	stored, err := rdb.Get(ctx, signing.RedisKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	k, err := signing.ParseSeed(stored)
	if err != nil || k.ID != ids[0] {
		t.Errorf("Redis holds another key: %v", err)
	}

	t.Run("a configured seed wins over Redis", func(t *testing.T) {
		k, err := signing.NewSource(rdb, rfcSeed).Key(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if k.ID != "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" {
			t.Errorf("got key %s", k.ID)
		}
	})
	t.Run("a bad configured seed is an error", func(t *testing.T) {
		if _, err := signing.NewSource(rdb, "nope").Key(ctx); err == nil {
			t.Fatal("no error")
		}
	})
}
