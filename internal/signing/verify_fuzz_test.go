package signing_test

import (
	"crypto/sha256"
	"net/http"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/invoicewire/invoicewire/internal/signing"
)

// fuzzKey is a fixed key, so the seeds below stay valid signatures.
func fuzzKey(tb testing.TB) *signing.Key {
	seed := sha256.Sum256([]byte("invoicewire fuzz key"))
	k, err := signing.NewKey(seed[:])
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// FuzzVerify feeds Signature-Input and Signature values (RFC 9421 §4, as
// Structured Fields of RFC 9651) to the verifier: nothing panics, and a pair
// verifies only when the signature is really the key's over the base the
// received parameters describe — which the fuzzer cannot forge, so any
// success must be the untouched seed.
func FuzzVerify(f *testing.F) {
	k := fuzzKey(f)
	now := time.Unix(1_764_000_000, 0)
	newReq := func() *http.Request {
		req, _ := http.NewRequest("POST", "https://hooks.example/in?x=1", nil)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Digest", signing.ContentDigest([]byte(`{}`)))
		return req
	}
	signed := newReq()
	comps := signing.Components("@method", "@target-uri", "@authority", "content-type", "content-digest")
	if err := k.SignRequest(signed, "sig1", comps, signing.Params{Created: now, Expires: now.Add(time.Minute), KeyID: k.ID, Alg: signing.Alg}); err != nil {
		f.Fatal(err)
	}
	goodInput, goodSig := signed.Header.Get(signing.HeaderSignatureInput), signed.Header.Get(signing.HeaderSignature)
	f.Add(goodInput, goodSig)
	f.Add(`sig1=("@method" "@query-param";name="x");created=1`, `sig1=:AAAA:`)
	f.Add(`sig1=("content-type";sf "content-digest";key="sha-256");alg="rsa-pss-sha512"`, `sig1=:AAAA:`)
	f.Add(`sig1=("@status")`, `sig1=:AAAA:`)
	f.Add(`sig1=("@request-response";key="sig0")`, `sig1=:AAAA:`)
	f.Add(`sig1=("x-missing";bs)`, `sig1=abc`)
	f.Add(`sig1="not a list"`, `sig1=:AAAA:`)
	f.Add(`sig1=(`, ``)
	f.Add(goodInput+`, sig2=("@path")`, goodSig)
	f.Add(goodInput, goodSig+`, sig0=:AAAA:`)
	f.Fuzz(func(t *testing.T, input, sig string) {
		req := newReq()
		req.Header.Set(signing.HeaderSignatureInput, input)
		req.Header.Set(signing.HeaderSignature, sig)
		v, err := signing.VerifyRequest(req, "sig1", k.Public(), now)
		if err != nil {
			return
		}
		if v == nil || member(t, input) != member(t, goodInput) || member(t, sig) != member(t, goodSig) {
			t.Fatalf("verified a signature the key never made: input %q signature %q", input, sig)
		}
	})
}

// member is the sig1 member of a Dictionary field, serialised.
func member(t *testing.T, field string) string {
	d, err := httpsfv.UnmarshalDictionary([]string{field})
	if err != nil {
		t.Fatalf("%q verified but does not parse: %v", field, err)
	}
	m, _ := d.Get("sig1")
	out := httpsfv.NewDictionary()
	out.Add("sig1", m)
	s, err := httpsfv.Marshal(out)
	if err != nil {
		t.Fatalf("re-serialising %q: %v", field, err)
	}
	return s
}

// FuzzContentDigest feeds Content-Digest values (RFC 9530): nothing panics,
// and a value verifies a body only when it carries a matching sha-256 or
// sha-512 member.
func FuzzContentDigest(f *testing.F) {
	f.Add(signing.ContentDigest([]byte("hello")), []byte("hello"))
	f.Add(signing.ContentDigest([]byte("hello")), []byte("hellO"))
	f.Add(`sha-512=:AAAA:, md5=:AAAA:`, []byte(""))
	f.Add(`sha-256=abc`, []byte(""))
	f.Add(`sha-256=:`, []byte("x"))
	f.Fuzz(func(t *testing.T, value string, body []byte) {
		err := signing.VerifyContentDigest([]string{value}, body)
		if err == nil && value != signing.ContentDigest(body) {
			// Only the real digest (or a dictionary holding it) verifies.
			if signing.VerifyContentDigest([]string{value}, append(body, 'x')) == nil {
				t.Fatalf("Content-Digest %q verifies two different bodies", value)
			}
		}
	})
}
