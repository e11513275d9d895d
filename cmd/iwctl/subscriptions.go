package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/webhook"
)

// subscriptionID is a subscription id (sub_...); the check keeps typing
// mistakes out of Redis keys.
var subscriptionID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// subscriptionsCommand runs `iwctl subscriptions list` and `iwctl
// subscriptions show|disable|enable SUB` (docs/operations.md, "Revoking tokens, deleting clients, disabling
// subscriptions"). The Redis side, one script in the {subs} slot, is
// webhook.Store's; the worker does the rest.
func subscriptionsCommand(ctx context.Context, ws *webhook.Store, args []string, out io.Writer, now func() time.Time) error {
	if len(args) == 0 {
		return usageError{"subscriptions takes the subcommand list, show, disable or enable"}
	}
	verb := args[0]
	switch verb {
	case "list":
		return listSubscriptions(ctx, ws, args[1:], out)
	case "show", "disable", "enable":
	default:
		return usageError{fmt.Sprintf("unknown subscriptions subcommand %q", verb)}
	}
	fs := flag.NewFlagSet("subscriptions "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ids, err := positional(fs, args[1:])
	if err != nil {
		return err
	}
	if len(ids) != 1 || !subscriptionID.MatchString(ids[0]) {
		return usageError{"subscriptions " + verb + " takes exactly one subscription id"}
	}
	id := ids[0]
	var res string
	var sub *webhook.Subscription
	switch verb {
	case "show":
		sub, err = ws.Get(ctx, "", id)
	case "disable":
		res, sub, err = ws.Disable(ctx, id, webhook.ReasonOperator, now())
	case "enable":
		res, sub, err = ws.Enable(ctx, id)
	}
	if errors.Is(err, webhook.ErrNotFound) {
		return fmt.Errorf("subscriptions %s: no such subscription %s", verb, id)
	}
	if err != nil {
		return err
	}
	switch {
	case verb == "show":
	case res == webhook.SwitchUnchanged && verb == "disable":
		fmt.Fprintf(out, "subscription %s: unchanged, already disabled (%s)\n", id, orDash(sub.DisabledReason))
	case res == webhook.SwitchUnchanged:
		fmt.Fprintf(out, "subscription %s: unchanged, already active\n", id)
	case verb == "disable":
		fmt.Fprintf(out, "subscription %s: disabled; no delivery is attempted from now on, and pending ones become dead letters as they come due\n", id)
	default:
		fmt.Fprintf(out, "subscription %s: enabled; new events are delivered again (iwctl deadletters replay --subscription %s queues what it missed)\n", id, id)
	}
	printSubscription(out, sub)
	return nil
}

// listSubscriptions runs `iwctl subscriptions list`: a client's from its
// index, newest first, or every one from a walk of the {subs} keys; then
// how many were printed.
func listSubscriptions(ctx context.Context, ws *webhook.Store, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("subscriptions list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	client := fs.String("client", "", "only this client's, newest first")
	status := fs.String("status", "", "only those with this status (active or disabled)")
	host := fs.String("host", "", "only those whose receiver is on this host")
	rest, err := positional(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) != 0:
		return usageError{"subscriptions list takes only --client, --status and --host"}
	case *client != "" && !clientID.MatchString(*client):
		return usageError{fmt.Sprintf("subscriptions list: %q is not a client id", *client)}
	case *status != "" && *status != webhook.StatusActive && *status != webhook.StatusDisabled:
		return usageError{fmt.Sprintf("subscriptions list: --status is active or disabled, not %q", *status)}
	}
	n := 0
	keep := func(subs []*webhook.Subscription) error {
		for _, s := range subs {
			if (*status == "" || s.Status == *status) && (*host == "" || strings.EqualFold(receiverHost(s), *host)) {
				printSubscription(out, s)
				n++
			}
		}
		return nil
	}
	if *client != "" {
		var subs []*webhook.Subscription
		if subs, err = ws.List(ctx, *client); err == nil {
			err = keep(subs)
		}
	} else {
		err = ws.Each(ctx, keep)
	}
	if err != nil {
		return fmt.Errorf("subscriptions list: %w (after %d subscriptions)", err, n)
	}
	fmt.Fprintf(out, "%d subscriptions\n", n)
	return nil
}
