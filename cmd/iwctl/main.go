// Command iwctl is Invoicewire's publishing CLI. It writes content to Redis,
// and every change it makes appends its event to the events stream and
// publishes the cache invalidation in the same atomic step (docs/decisions.md, retraction and correction).
//
//	iwctl sync [DIR]                       validate DIR (default content) whole, then publish what
//	                                       changed and remove registry entries no longer in it;
//	                                       warns of published articles with no file
//	iwctl retract SLUG --reason TEXT       pull an article (article.retracted); on a retracted
//	                                       one, correct its reason (no event)
//	iwctl restore SLUG                     undo a retraction (article.published)
//	iwctl newsletter send [--week W] [--content DIR]
//	                                       send the weekly issue (newsletter.sent)
//	iwctl deadletters list [--limit N]     show webhook dead letters, newest first (default 20; 0: all)
//	iwctl deadletters replay [ID...] [--subscription SUB]
//	                                       queue dead letters again, by entry id and/or all of a
//	                                       subscription's; each is replayed only while its
//	                                       subscription is active and its event body is stored
//	                                       (docs/operations.md, invoicewirewebhookdeadletters);
//	                                       exits 1 when any requested one was not replayed
//	iwctl tokens revoke HASH... | --client CLIENT
//	                                       revoke access tokens, by SHA-256 hex or all of a client's;
//	                                       every edge and origin refuses them on the next request
//	iwctl clients show CLIENT              a client, its live tokens (by hash) and its subscriptions
//	iwctl clients delete CLIENT            delete a client with its tokens and subscriptions
//	iwctl subscriptions show|disable|enable SUB
//	                                       show a subscription, stop its deliveries (pending ones
//	                                       become dead letters as they come due), or resume them
//
// (docs/operations.md, "Revoking tokens, deleting clients, disabling
// subscriptions").
//
// `iwctl COMMAND --help` prints that command's usage. Usage errors exit 2,
// failures 1.
//
// It reads IW_REDIS_URL and IW_PUBLIC_URL like the servers do. With
// IWCTL_CPU_PROFILE set to a file name it writes a CPU profile of the
// command there, as go tool pprof reads (docs/scale.md measures publishing
// with it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/invoicewire/invoicewire/internal/config"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/logging"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

const usage = `usage:
  iwctl sync [DIR]
  iwctl retract SLUG --reason TEXT
  iwctl restore SLUG
  iwctl newsletter send [--week 2026-w47] [--content DIR]
  iwctl deadletters list [--limit N]
  iwctl deadletters replay [ID...] [--subscription SUB]
  iwctl tokens revoke HASH... | --client CLIENT
  iwctl clients list
  iwctl clients show|delete CLIENT
  iwctl subscriptions list [--client CLIENT] [--status STATUS] [--host HOST]
  iwctl subscriptions show|disable|enable SUB
`

// commandUsage is each command's own usage, which `iwctl COMMAND --help`
// prints.
var commandUsage = map[string]string{
	"sync": `usage: iwctl sync [DIR]
  Validate the content tree DIR (default content) as a whole and, when it is
  valid, publish what changed. Sources, countries and specs no longer in
  its registry files are removed, unless a published article with no file
  in DIR still cites one: then nothing is written. Published articles with
  no file in DIR are listed as warnings and stay published (iwctl retract
  pulls them). An article whose published_at moved to another month is
  listed with its old and new address (the old one answers 301).
`,
	"retract": `usage: iwctl retract SLUG --reason TEXT
  Pull an article (emits article.retracted); it then answers 410 with TEXT.
  On a retracted article, a new TEXT replaces the reason (no event).
`,
	"restore": `usage: iwctl restore SLUG
  Undo a retraction (emits article.published).
`,
	"newsletter": `usage: iwctl newsletter send [--week 2026-w47] [--content DIR]
  Send the weekly issue (emits newsletter.sent); --week defaults to this
  week, --content to content (for newsletters/<week>.md intros).
`,
	"deadletters": `usage: iwctl deadletters list [--limit N]
       iwctl deadletters replay [ID...] [--subscription SUB]
  list shows webhook dead letters, newest first (default 20; 0: all).
  replay queues dead letters again, by entry id (as list shows them, e.g.
  1764230844123-0) and/or all of a subscription's; it exits 1 when any
  requested dead letter was not replayed.
`,
	"tokens": `usage: iwctl tokens revoke HASH...
       iwctl tokens revoke --client CLIENT
  Revoke access tokens, named by their SHA-256 hex (as clients show prints
  them; never the token itself), or every token of CLIENT. Each is deleted
  and announced to every edge's token cache, so the next request with it
  gets 401. The client stays registered and can claim a new token (clients
  delete ends that). Exits 1 when a named token or the client is not found.
`,
	"clients": `usage: iwctl clients list
       iwctl clients show CLIENT
       iwctl clients delete CLIENT
  list prints every registered client, one line each, in no particular
  order, then how many.
  show prints the client's registration, its live tokens (by hash, with
  their expiry) and its webhook subscriptions.
  delete removes the client's registration, revokes its tokens and deletes
  its subscriptions (their pending deliveries are dropped). Running it again
  finishes a run that was cut short; it exits 1 when nothing of the client
  is left.
`,
	"subscriptions": `usage: iwctl subscriptions list [--client CLIENT] [--status active|disabled] [--host HOST]
       iwctl subscriptions show SUB
       iwctl subscriptions disable SUB
       iwctl subscriptions enable SUB
  list prints the subscriptions, one line each, then how many: every one in
  no particular order, or those of CLIENT newest first; --status and --host
  keep only those that match. --host HOST matches the receiver's host on any
  port; --host HOST:PORT only on that port, where a URL without a port has
  its scheme's (443 for https, 80 for http).
  show prints the subscription (the receiver by its host only).
  disable stops its deliveries: no new one is made for it, its pending ones
  become dead letters as they come due, unattempted, and its owner sees
  status "disabled". enable resumes it, whatever disabled it, for events
  published from then on: events published while it was disabled made no
  delivery for it and are never delivered to it. iwctl deadletters replay
  --subscription SUB queues again only the deliveries that were pending when
  it was disabled (they became dead letters). Both are no-ops on a
  subscription already in that state; an unknown one exits 1.
`,
}

// helpRequested reports whether args ask for help (-h, -help, --help)
// before any "--".
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

func main() { os.Exit(mainCode()) }

// mainCode runs the command and returns the exit status, so that the
// deferred calls (the profile's end) run before the process exits.
func mainCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f := os.Getenv("IWCTL_CPU_PROFILE"); f != "" {
		stopProfile, err := startProfile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iwctl:", err)
			return 1
		}
		defer stopProfile()
	}
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "iwctl:", err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprint(os.Stderr, usage)
			return 2
		}
		return 1
	}
	return 0
}

// startProfile starts a CPU profile written to file and returns what ends
// it.
func startProfile(file string) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "iwctl: writing the CPU profile:", err)
		}
	}, nil
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// conn is what a command needs of the store.
type conn struct {
	st *store.Store
	p  *store.Publisher
	ws *webhook.Store
}

// action is a command whose arguments have been checked, to run against
// the store.
type action func(ctx context.Context, c conn) error

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command given"}
	}
	// Help, unknown commands and every usage mistake are answered before
	// Redis is reached, so they need no running store, nor wait for one
	// to connect or to load its data (docs/operations.md: a usage mistake
	// exits 2).
	switch args[0] {
	case "-h", "-help", "--help", "help":
		_, err := fmt.Fprint(out, usage)
		return err
	case "sync", "retract", "restore", "newsletter", "deadletters", "tokens", "clients", "subscriptions":
		if helpRequested(args[1:]) {
			_, err := fmt.Fprint(out, commandUsage[args[0]])
			return err
		}
	default:
		return usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	act, err := parse(args[0], args[1:], out)
	if err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	// What iwctl logs, as against what it reports, is JSON on stderr like
	// the servers' log, go-redis's own lines included (README, "logs are
	// JSON on stderr").
	log := logging.New("iwctl", cfg.LogLevel)
	logging.RouteRedis(log)
	st, err := store.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkAnswers(ctx, st.Client()); err != nil {
		return err
	}
	if err := store.WaitLoaded(ctx, st.Client(), log); err != nil {
		return err
	}
	return act(ctx, conn{
		st: st,
		p:  &store.Publisher{Store: st, SiteRoot: cfg.PublicURL, Now: time.Now},
		ws: webhook.NewStore(st.Client()),
	})
}

// parse checks a command's arguments and returns what runs it.
func parse(cmd string, rest []string, out io.Writer) (action, error) {
	switch cmd {
	case "sync":
		dir := "content"
		if len(rest) > 1 {
			return nil, usageError{"sync takes at most one directory"}
		}
		if len(rest) == 1 {
			dir = rest[0]
		}
		return func(ctx context.Context, c conn) error {
			if info, err := os.Stat(dir); err != nil {
				return fmt.Errorf("sync: content directory %s: %w", dir, errors.Unwrap(err))
			} else if !info.IsDir() {
				return fmt.Errorf("sync: %s is not a directory", dir)
			}
			return syncDir(ctx, c.p, dir, out)
		}, nil
	case "retract":
		fs := flag.NewFlagSet("retract", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		reason := fs.String("reason", "", "why the article is pulled (shown to readers)")
		slug, err := oneArg(fs, rest)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(*reason) == "" {
			return nil, usageError{"retract needs --reason"}
		}
		return func(ctx context.Context, c conn) error {
			o, err := c.p.Retract(ctx, slug, strings.TrimSpace(*reason))
			return report(out, "retract "+slug, o, err)
		}, nil
	case "restore":
		fs := flag.NewFlagSet("restore", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		slug, err := oneArg(fs, rest)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, c conn) error {
			o, err := c.p.Restore(ctx, slug)
			return report(out, "restore "+slug, o, err)
		}, nil
	case "newsletter":
		if len(rest) == 0 || rest[0] != "send" {
			return nil, usageError{"newsletter takes the subcommand send"}
		}
		fs := flag.NewFlagSet("newsletter send", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		week := fs.String("week", content.ISOWeek(time.Now()), "ISO week to send, e.g. 2026-w47")
		dir := fs.String("content", "content", "content directory holding newsletters/<week>.md intros")
		if err := fs.Parse(rest[1:]); err != nil || fs.NArg() != 0 {
			return nil, usageError{"newsletter send takes only --week and --content"}
		}
		return func(ctx context.Context, c conn) error {
			intro, err := readIntro(*dir, *week)
			if err != nil {
				return err
			}
			o, err := c.p.SendNewsletter(ctx, *week, intro)
			return report(out, "newsletter "+*week, o, err)
		}, nil
	case "deadletters":
		return deadLetters(rest, out, time.Now)
	case "tokens":
		return tokensCommand(rest, out)
	case "clients":
		return clientsCommand(rest, out)
	case "subscriptions":
		return subscriptionsCommand(rest, out, time.Now)
	default:
		return nil, usageError{"unknown command " + cmd}
	}
}

// oneArg parses flags around exactly one positional argument, which may come
// before or after them.
func oneArg(fs *flag.FlagSet, args []string) (string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return "", usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	if len(pos) != 1 {
		return "", usageError{fs.Name() + " takes exactly one slug"}
	}
	return pos[0], nil
}

func report(out io.Writer, what string, o store.Outcome, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s: no such article", what)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case !o.Changed:
		fmt.Fprintf(out, "%s: unchanged\n", what)
	case o.Event == "" && strings.HasPrefix(what, "retract "):
		fmt.Fprintf(out, "%s: reason updated, no event (content version %d)\n", what, o.Version)
	case o.Event != "":
		fmt.Fprintf(out, "%s: done, emitted %s (content version %d)\n", what, o.Event, o.Version)
	default:
		fmt.Fprintf(out, "%s: done (content version %d)\n", what, o.Version)
	}
	return nil
}

// readIntro loads the editor's intro for week from the content tree, when
// there is one. The whole tree is validated, so a broken tree is noticed
// before anything is sent.
func readIntro(dir, week string) (*content.NewsletterIntro, error) {
	c, err := content.Load(dir)
	if err != nil {
		return nil, err
	}
	return c.Newsletters[week], nil
}
