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

// subscriptionID is a subscription id (sub_...); the check keeps typing
// mistakes out of Redis keys.
var subscriptionID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// subscriptionsCommand runs `iwctl subscriptions show|disable|enable SUB`
// (docs/operations.md, "Revoking tokens, deleting clients, disabling
// subscriptions"). The Redis side, one script in the {subs} slot, is
// webhook.Store's; the worker does the rest.
func subscriptionsCommand(ctx context.Context, ws *webhook.Store, args []string, out io.Writer, now func() time.Time) error {
	if len(args) == 0 {
		return usageError{"subscriptions takes the subcommand show, disable or enable"}
	}
	verb := args[0]
	switch verb {
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
