package signing

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/redistest"
)

// TestThumbprint checks the RFC 7638 thumbprint against RFC 8037 appendix
// A.3's example key.
func TestThumbprint(t *testing.T) {
	x, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if got, want := thumbprint(ed25519.PublicKey(x)), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Errorf("thumbprint = %s, want %s", got, want)
	}
	// RFC 8037 A.1's private key has that public key.
	d, _ := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	k, err := FromSeed(d)
	if err != nil {
		t.Fatal(err)
	}
	if k.KeyID != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" || k.PublicJWK().X != "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" {
		t.Errorf("key = %+v", k.PublicJWK())
	}
	if p, err := Parse(k.Encode()); err != nil || p.KeyID != k.KeyID {
		t.Errorf("Parse(Encode()) = %v, %v", p, err)
	}
}

// TestLoadAgrees: processes starting at once all end up with one key.
func TestLoadAgrees(t *testing.T) {
	rdb := redistest.Start(t).Client()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := Load(context.Background(), rdb, "")
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.KeyID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("keys differ: %v", ids)
		}
	}
}

// TestSignatureBase checks the serialisation of RFC 9421 §2.5 on the
// components a delivery signs.
func TestSignatureBase(t *testing.T) {
	d, _ := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	k, _ := FromSeed(d)
	s, err := k.SignMessage("sig1", []Component{
		{Name: "@authority", Value: "example.com"},
		{Name: "signature-agent", Params: [][2]string{{"key", "sig1"}}, Value: `"https://a.example"`},
	}, Params{Created: unix(1618884473), Tag: "web-bot-auth"})
	if err != nil {
		t.Fatal(err)
	}
	wantInput := `sig1=("@authority" "signature-agent";key="sig1");created=1618884473;keyid="kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";alg="ed25519";tag="web-bot-auth"`
	if s.SignatureInput != wantInput {
		t.Errorf("Signature-Input = %s\nwant %s", s.SignatureInput, wantInput)
	}
	wantBase := "\"@authority\": example.com\n\"signature-agent\";key=\"sig1\": \"https://a.example\"\n\"@signature-params\": " + strings.TrimPrefix(wantInput, "sig1=")
	if s.Base != wantBase {
		t.Errorf("base = %q\nwant %q", s.Base, wantBase)
	}
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(strings.TrimPrefix(s.Signature, "sig1=:"), ":"))
	if !ed25519.Verify(k.Public(), []byte(s.Base), sig) {
		t.Error("the signature does not verify over the base")
	}
}

func unix(s int64) time.Time { return time.Unix(s, 0) }
