package tokenverifier

import (
	"context"
	"testing"
	"time"

	"github.com/invoicewire/invoicewire/internal/clients"
	"github.com/invoicewire/invoicewire/internal/redistest"
	"github.com/invoicewire/invoicewire/internal/token"
)

// TestOperatorRevocation: an edge that has a token's good answer cached
// refuses the token once an operator revokes it (iwctl tokens revoke, which
// is clients.RevokeHash), well before the cache's 30 s run out, also when
// the revocation is run again after a crash that left the token deleted
// but unannounced (docs/operations.md, "Revoking tokens, deleting clients,
// disabling subscriptions").
func TestOperatorRevocation(t *testing.T) {
	testCases := []struct {
		desc string
		// crashed: an earlier run deleted the token and died before
		// announcing it.
		crashed bool
	}{
		{desc: "revoked once"},
		{desc: "revoked again after a run that died before announcing", crashed: true},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			srv := redistest.New(t)
			v := acquire(t, srv.URL())
			ctx := context.Background()
			writeToken(t, srv, "tok", "cli_1", time.Hour)
			if _, err := v.Verify(ctx, "tok"); err != nil {
				t.Fatal(err)
			}
			v.cache.Wait()
			if tc.crashed {
				srv.Client().Del(ctx, token.Key("tok"))
				if _, err := v.Verify(ctx, "tok"); err != nil {
					t.Fatalf("the cached answer should still hold before any announcement: %v", err)
				}
			}
			found, err := clients.RevokeHash(ctx, srv.Client(), token.Hash("tok"))
			if err != nil || found == tc.crashed {
				t.Fatalf("RevokeHash = %v, %v; want found %v", found, err, !tc.crashed)
			}
			waitRevoked(ctx, t, v, "tok")
		})
	}
}
