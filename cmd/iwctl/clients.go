package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicewire/invoicewire/internal/clients"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// The commands that end access (docs/operations.md, "Revoking tokens,
// deleting clients, disabling subscriptions"): `iwctl tokens revoke`,
// `iwctl clients show|delete`. The Redis side, its order of steps and its
// announcements to the verifiers' caches are package clients'. Tokens are
// named and printed by their SHA-256 hex only; iwctl never sees a token.

// tokenHash is a token's SHA-256 hex, as clients show prints it.
var tokenHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// clientID is a client id as registration issues them (cli_...); the
// check only keeps typing mistakes such as a pasted URL out of Redis keys.
var clientID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// tokensCommand checks the arguments of `iwctl tokens revoke` and returns
// what runs it.
func tokensCommand(args []string, out io.Writer) (action, error) {
	if len(args) == 0 || args[0] != "revoke" {
		return nil, usageError{"tokens takes the subcommand revoke"}
	}
	fs := flag.NewFlagSet("tokens revoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	client := fs.String("client", "", "revoke every access token of this client")
	hashes, err := positional(fs, args[1:])
	if err != nil {
		return nil, err
	}
	if (len(hashes) == 0) == (*client == "") {
		return nil, usageError{"tokens revoke takes token hashes (from clients show) or --client CLIENT, not both"}
	}
	if *client != "" {
		if !clientID.MatchString(*client) {
			return nil, usageError{fmt.Sprintf("tokens revoke: %q is not a client id", *client)}
		}
		return func(ctx context.Context, c conn) error {
			return revokeClientTokens(ctx, c.st.Client(), *client, out)
		}, nil
	}
	for i, h := range hashes {
		hashes[i] = strings.ToLower(h)
		if !tokenHash.MatchString(hashes[i]) {
			// Not quoted back: it may be the token itself, pasted by
			// mistake, and error output ends up in terminals' scrollback
			// and tickets.
			return nil, usageError{fmt.Sprintf("tokens revoke: argument %d is not a token hash (64 hex digits, as clients show prints them; never the token itself)", i+1)}
		}
	}
	return func(ctx context.Context, c conn) error {
		return revokeHashes(ctx, c.st.Client(), hashes, out)
	}, nil
}

// revokeHashes revokes the tokens of hashes, each once, reporting each on
// its own line, then a summary; it fails when any was not found.
func revokeHashes(ctx context.Context, rdb redis.UniversalClient, hashes []string, out io.Writer) error {
	revoked, missed := 0, 0
	seen := map[string]bool{}
	for _, h := range hashes {
		if seen[h] {
			continue
		}
		seen[h] = true
		found, err := clients.RevokeHash(ctx, rdb, h)
		if err != nil {
			return err
		}
		if found {
			revoked++
			fmt.Fprintf(out, "%s: revoked\n", h)
		} else {
			missed++
			fmt.Fprintf(out, "%s: skipped: no such token (expired or already revoked?)\n", h)
		}
	}
	fmt.Fprintf(out, "revoked %d of %d tokens requested\n", revoked, len(seen))
	if missed > 0 {
		return errors.New("tokens revoke: not every token requested was found (see above)")
	}
	return nil
}

func revokeClientTokens(ctx context.Context, rdb redis.UniversalClient, id string, out io.Writer) error {
	rec, err := clients.Get(ctx, rdb, id)
	if err != nil {
		return err
	}
	n, err := clients.RevokeAll(ctx, rdb, id)
	if err != nil {
		return err
	}
	if rec == nil && n == 0 {
		return fmt.Errorf("tokens revoke: no such client %s", id)
	}
	fmt.Fprintf(out, "client %s: revoked %d tokens\n", id, n)
	if rec != nil {
		fmt.Fprintf(out, "client %s is still registered and can claim a new token; iwctl clients delete %s ends that\n", id, id)
	}
	return nil
}

// clientsCommand checks the arguments of `iwctl clients list` and `iwctl
// clients show|delete CLIENT` and returns what runs it.
func clientsCommand(args []string, out io.Writer) (action, error) {
	if len(args) == 0 || (args[0] != "list" && args[0] != "show" && args[0] != "delete") {
		return nil, usageError{"clients takes the subcommand list, show or delete"}
	}
	fs := flag.NewFlagSet("clients "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ids, err := positional(fs, args[1:])
	if err != nil {
		return nil, err
	}
	if args[0] == "list" {
		if len(ids) != 0 {
			return nil, usageError{"clients list takes no arguments"}
		}
		return func(ctx context.Context, c conn) error { return listClients(ctx, c.st.Client(), out) }, nil
	}
	if len(ids) != 1 || !clientID.MatchString(ids[0]) {
		return nil, usageError{"clients " + args[0] + " takes exactly one client id"}
	}
	id := ids[0]
	if args[0] == "show" {
		return func(ctx context.Context, c conn) error { return showClient(ctx, c.st.Client(), id, out) }, nil
	}
	return func(ctx context.Context, c conn) error { return deleteClient(ctx, c.st.Client(), id, out) }, nil
}

// deleteClient deletes a client with its tokens and subscriptions.
func deleteClient(ctx context.Context, rdb redis.UniversalClient, id string, out io.Writer) error {
	d, err := clients.Delete(ctx, rdb, id)
	if err != nil {
		return fmt.Errorf("clients delete %s: %w (run it again to finish)", id, err)
	}
	if !d.Any() {
		return fmt.Errorf("clients delete: no such client %s (already deleted?)", id)
	}
	reg := "registration deleted"
	if !d.Record {
		reg = "registration already gone"
	}
	fmt.Fprintf(out, "client %s: deleted (%s, %d tokens revoked, %d subscriptions deleted)\n", id, reg, d.Tokens, d.Subscriptions)
	return nil
}

// showClient prints a client, its live tokens (by hash) and its
// subscriptions, one line each.
func showClient(ctx context.Context, rdb redis.UniversalClient, id string, out io.Writer) error {
	rec, err := clients.Get(ctx, rdb, id)
	if err != nil {
		return err
	}
	toks, err := clients.Tokens(ctx, rdb, id)
	if err != nil {
		return err
	}
	subs, err := webhook.NewStore(rdb).List(ctx, id)
	if err != nil {
		return err
	}
	if rec == nil && len(toks) == 0 && len(subs) == 0 {
		return fmt.Errorf("clients show: no such client %s", id)
	}
	if rec != nil {
		printClient(out, rec)
	} else {
		fmt.Fprintf(out, "client %s registration=deleted\n", id)
	}
	hashes := make([]string, 0, len(toks))
	for h := range toks {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	for _, h := range hashes {
		fmt.Fprintf(out, "token %s expires=%s\n", h, toks[h].ExpiresAt.UTC().Format(time.RFC3339))
	}
	for _, s := range subs {
		printSubscription(out, s)
	}
	return nil
}

// listClients prints every registered client, then how many.
func listClients(ctx context.Context, rdb redis.UniversalClient, out io.Writer) error {
	n := 0
	err := clients.Each(ctx, rdb, func(recs []*clients.Record) error {
		for _, rec := range recs {
			printClient(out, rec)
		}
		n += len(recs)
		return nil
	})
	if err != nil {
		return fmt.Errorf("clients list: %w (after %d clients)", err, n)
	}
	fmt.Fprintf(out, "%d clients\n", n)
	return nil
}

// printClient writes a client's registration on one line.
func printClient(out io.Writer, rec *clients.Record) {
	fmt.Fprintf(out, "client %s name=%q contact=%s identity=%s issued=%s\n", rec.ClientID, rec.ClientName, orDash(rec.Contact),
		rec.IdentityType, time.Unix(rec.IssuedAt, 0).UTC().Format(time.RFC3339))
}

// printSubscription writes one subscription on one line. The receiver is
// shown by its host only: the rest of its URL may carry the owner's
// credentials, and the secret is never shown.
func printSubscription(out io.Writer, s *webhook.Subscription) {
	host := orDash(receiverHost(s))
	reason := "-"
	if s.Status != webhook.StatusActive {
		reason = orDash(s.DisabledReason)
	}
	fmt.Fprintf(out, "subscription %s client=%s status=%s reason=%s events=%s receiver=%s created=%s\n",
		s.ID, orDash(s.ClientID), s.Status, reason, strings.Join(s.Events, ","), host, s.CreatedAt.UTC().Format(time.RFC3339))
}

// receiverHost is the host (and port, if any) of a subscription's
// receiver URL, empty when it does not parse.
func receiverHost(s *webhook.Subscription) string {
	if u, err := url.Parse(s.URL); err == nil {
		return u.Host
	}
	return ""
}

// positional parses flags placed anywhere among the positional arguments,
// and returns those.
func positional(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	return pos, nil
}
