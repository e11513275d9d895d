package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/webhook"
)

// subscriptionID is a subscription id (sub_...); the check keeps typing
// mistakes out of Redis keys.
var subscriptionID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// subscriptionsCommand checks the arguments of `iwctl subscriptions list`
// and `iwctl subscriptions show|disable|enable SUB` (docs/operations.md,
// "Revoking tokens, deleting clients, disabling subscriptions") and returns
// what runs it. The Redis side, one script in the {subs} slot, is
// webhook.Store's; the worker does the rest.
func subscriptionsCommand(args []string, out io.Writer, now func() time.Time) (action, error) {
	if len(args) == 0 {
		return nil, usageError{"subscriptions takes the subcommand list, show, disable or enable"}
	}
	verb := args[0]
	switch verb {
	case "list":
		return listSubscriptions(args[1:], out)
	case "show", "disable", "enable":
	default:
		return nil, usageError{fmt.Sprintf("unknown subscriptions subcommand %q", verb)}
	}
	fs := flag.NewFlagSet("subscriptions "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ids, err := positional(fs, args[1:])
	if err != nil {
		return nil, err
	}
	if len(ids) != 1 || !subscriptionID.MatchString(ids[0]) {
		return nil, usageError{"subscriptions " + verb + " takes exactly one subscription id"}
	}
	return func(ctx context.Context, c conn) error {
		return switchSubscription(ctx, c.ws, verb, ids[0], out, now)
	}, nil
}

// switchSubscription shows, disables or enables (verb) subscription id.
func switchSubscription(ctx context.Context, ws *webhook.Store, verb, id string, out io.Writer, now func() time.Time) error {
	var (
		res string
		sub *webhook.Subscription
		err error
	)
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
		// Events published while it was disabled made no delivery for it
		// (docs/operations.md, "Disabling a subscription"): nothing of
		// them is kept to replay, only what was pending at the disable.
		fmt.Fprintf(out, "subscription %s: enabled; events published from now on are delivered; those published while it was disabled were not kept for it and are not delivered (iwctl deadletters replay --subscription %s queues only the deliveries that were pending when it was disabled)\n", id, id)
	}
	printSubscription(out, sub)
	return nil
}

// listSubscriptions checks the arguments of `iwctl subscriptions list` and
// returns what runs it: a client's from its index, newest first, or every
// one from a walk of the {subs} keys; then how many were printed.
func listSubscriptions(args []string, out io.Writer) (action, error) {
	fs := flag.NewFlagSet("subscriptions list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	client := fs.String("client", "", "only this client's, newest first")
	status := fs.String("status", "", "only those with this status (active or disabled)")
	host := fs.String("host", "", "only those whose receiver is on this host")
	rest, err := positional(fs, args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(rest) != 0:
		return nil, usageError{"subscriptions list takes only --client, --status and --host"}
	case *client != "" && !clientID.MatchString(*client):
		return nil, usageError{fmt.Sprintf("subscriptions list: %q is not a client id", *client)}
	case *status != "" && *status != webhook.StatusActive && *status != webhook.StatusDisabled:
		return nil, usageError{fmt.Sprintf("subscriptions list: --status is active or disabled, not %q", *status)}
	}
	return func(ctx context.Context, c conn) error {
		return eachSubscription(ctx, c.ws, *client, *status, *host, out)
	}, nil
}

// eachSubscription prints the subscriptions of client (every one when it
// is empty) whose status and receiver's host match, when given, then how
// many it printed.
func eachSubscription(ctx context.Context, ws *webhook.Store, client, status, host string, out io.Writer) error {
	var err error
	n := 0
	keep := func(subs []*webhook.Subscription) error {
		for _, s := range subs {
			if (status == "" || s.Status == status) && (host == "" || onHost(s, host)) {
				printSubscription(out, s)
				n++
			}
		}
		return nil
	}
	if client != "" {
		var subs []*webhook.Subscription
		if subs, err = ws.List(ctx, client); err == nil {
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

// onHost reports whether s delivers to host, as an abuse report names it
// (docs/operations.md, "Finding them"): a host name or address alone
// matches the receiver on any port; host:port matches that port only, the
// scheme's default port standing for a URL that gives none, so
// hooks.example:443 finds https://hooks.example/in and
// https://hooks.example:443/in alike. Names compare without case and
// without a trailing dot.
func onHost(s *webhook.Subscription, host string) bool {
	u, err := url.Parse(s.URL)
	if err != nil {
		return false
	}
	name, port := host, ""
	switch {
	case strings.HasPrefix(host, "["):
		// [v6] or [v6]:port
		if h, p, err := net.SplitHostPort(host); err == nil {
			name, port = h, p
		} else {
			name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		}
	case strings.Count(host, ":") == 1:
		if h, p, err := net.SplitHostPort(host); err == nil {
			name, port = h, p
		}
	}
	canon := func(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }
	if canon(u.Hostname()) != canon(name) {
		return false
	}
	return port == "" || port == receiverPort(u)
}

// receiverPort is the port a receiver URL delivers to: its own, else its
// scheme's default.
func receiverPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "http") {
		return "80"
	}
	return "443"
}
