package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/invoicewire/invoicewire/internal/webhook"
)

// deadLetters runs `iwctl deadletters list|replay` (docs/operations.md,
// invoicewirewebhookdeadletters). The Redis side, and its atomicity, is
// webhook.Store's. Its arguments are checked before it returns what runs
// it.
func deadLetters(args []string, out io.Writer, now func() time.Time) (action, error) {
	if len(args) == 0 {
		return nil, usageError{"deadletters takes the subcommand list or replay"}
	}
	switch args[0] {
	case "list":
		fs := flag.NewFlagSet("deadletters list", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		limit := fs.Int64("limit", 20, "how many dead letters to show, newest first (0: all)")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || *limit < 0 {
			return nil, usageError{"deadletters list takes only --limit N"}
		}
		return func(ctx context.Context, c conn) error {
			list, err := c.ws.DeadLetterList(ctx, *limit)
			if err != nil {
				return err
			}
			for _, e := range list {
				printDeadLetter(out, e)
			}
			if len(list) == 0 {
				fmt.Fprintln(out, "no dead letters")
			}
			return nil
		}, nil
	case "replay":
		fs := flag.NewFlagSet("deadletters replay", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		sub := fs.String("subscription", "", "replay every dead letter of this subscription")
		var ids []string
		for rest := args[1:]; len(rest) > 0; {
			if err := fs.Parse(rest); err != nil {
				return nil, usageError{err.Error()}
			}
			rest = fs.Args()
			if len(rest) > 0 {
				ids, rest = append(ids, rest[0]), rest[1:]
			}
		}
		if len(ids) == 0 && *sub == "" {
			return nil, usageError{"deadletters replay takes entry ids (from deadletters list) and/or --subscription SUB"}
		}
		for _, id := range ids {
			if !entryID.MatchString(id) {
				return nil, usageError{fmt.Sprintf("deadletters replay: %q is not a dead-letter entry id (MILLISECONDS-SEQUENCE, such as 1764230844123-0, as deadletters list shows)", id)}
			}
		}
		return func(ctx context.Context, c conn) error {
			return replay(ctx, c.ws, ids, *sub, out, now)
		}, nil
	default:
		return nil, usageError{fmt.Sprintf("unknown deadletters subcommand %q", args[0])}
	}
}

// printDeadLetter writes one dead letter on one line. The last error is
// left out: it may quote the receiver's URL, credentials and all.
func printDeadLetter(out io.Writer, e webhook.DeadLetterEntry) {
	status := "-"
	if e.LastStatus != 0 {
		status = fmt.Sprint(e.LastStatus)
	}
	fmt.Fprintf(out, "%s delivery=%s subscription=%s event=%s type=%s attempts=%d status=%s reason=%q\n",
		e.EntryID, orDash(e.Delivery), orDash(e.Subscription), orDash(e.EventID), orDash(e.EventType), e.Attempts, status, e.Reason)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// entryID is a Redis stream entry id as deadletters list prints it
// (milliseconds and sequence number).
var entryID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// replay replays the named entries, then every dead letter of sub, each
// once, and reports each outcome on its own line, then a summary. It fails
// (iwctl exits 1) when anything requested was not replayed: an id not
// found, an entry skipped, or a subscription that does not exist. A
// subscription that exists and missed nothing has nothing to replay, which
// is success: `iwctl subscriptions enable S && iwctl deadletters replay
// --subscription S` must not fail for a receiver that never failed.
func replay(ctx context.Context, ws *webhook.Store, ids []string, sub string, out io.Writer, now func() time.Time) error {
	var todo []webhook.DeadLetterEntry
	seen := map[string]bool{}
	requested, missed := 0, 0
	if len(ids) > 0 {
		got, err := ws.DeadLetterGet(ctx, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			requested++
			e, ok := got[id]
			if !ok {
				missed++
				fmt.Fprintf(out, "%s: %s\n", id, webhook.ReplayGone)
				continue
			}
			todo = append(todo, e)
		}
	}
	if sub != "" {
		list, err := ws.DeadLettersOf(ctx, sub)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			found, err := ws.Subscriptions(ctx, []string{sub})
			if err != nil {
				return err
			}
			if found[sub] == nil {
				fmt.Fprintf(out, "no subscription %s, and no dead letters of it\n", sub)
				missed++
			} else {
				fmt.Fprintf(out, "no dead letters of subscription %s: nothing to replay\n", sub)
			}
		}
		for _, e := range list {
			if !seen[e.EntryID] {
				seen[e.EntryID] = true
				requested++
				todo = append(todo, e)
			}
		}
	}
	replayed := 0
	for _, e := range todo {
		res, err := ws.Replay(ctx, e, now())
		if err != nil {
			return err
		}
		if res == webhook.ReplayDone || res == webhook.ReplayPending {
			replayed++
		} else {
			missed++
		}
		fmt.Fprintf(out, "%s: %s (delivery %s of event %s to subscription %s)\n",
			e.EntryID, res, orDash(e.Delivery), orDash(e.EventID), orDash(e.Subscription))
	}
	fmt.Fprintf(out, "replayed %d of %d dead letters requested\n", replayed, requested)
	if missed > 0 {
		return errors.New("deadletters replay: not every dead letter requested was replayed (see above)")
	}
	return nil
}
