package signing

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/dunglas/httpsfv"
)

// HeaderContentDigest is the RFC 9530 field a signature covers to protect a
// body.
const HeaderContentDigest = "Content-Digest"

// ContentDigest is the RFC 9530 Content-Digest value of body with SHA-256:
// sha-256=:<base64>:.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	d := httpsfv.NewDictionary()
	d.Add("sha-256", httpsfv.NewItem(sum[:]))
	s, _ := httpsfv.Marshal(d) // a fixed shape; cannot fail
	return s
}

// VerifyContentDigest checks body against a Content-Digest value carrying
// sha-256 or sha-512 (RFC 9530 §2); other algorithms are ignored, and at
// least one known one must be present and match.
func VerifyContentDigest(values []string, body []byte) error {
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return fmt.Errorf("signing: Content-Digest is malformed: %w", err)
	}
	checked := false
	for _, alg := range d.Names() {
		var sum []byte
		switch alg {
		case "sha-256":
			s := sha256.Sum256(body)
			sum = s[:]
		case "sha-512":
			s := sha512.Sum512(body)
			sum = s[:]
		default:
			continue
		}
		m, _ := d.Get(alg)
		it, ok := m.(httpsfv.Item)
		got, isBytes := it.Value.([]byte)
		if !ok || !isBytes {
			return fmt.Errorf("signing: Content-Digest %s is not a byte sequence", alg)
		}
		if subtle.ConstantTimeCompare(got, sum) != 1 {
			return fmt.Errorf("signing: Content-Digest %s does not match the body", alg)
		}
		checked = true
	}
	if !checked {
		return errors.New("signing: Content-Digest has neither sha-256 nor sha-512")
	}
	return nil
}
