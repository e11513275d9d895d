package site_test

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/content/contenttest"
	"github.com/invoicewire/invoicewire/origin/origintest"
)

// chromium finds the browser: the Debian package installs "chromium"
// (deploy/local/deps.sh test installs it, so CI never skips this test).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH; make test installs the Debian package chromium (deploy/local/deps.sh test)")
	return ""
}

// browser starts one headless Chromium for the test, with a throwaway
// profile and nothing that reaches the network on its own.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pageProblems collects what went wrong while a page loaded: console
// errors, uncaught exceptions and failed requests to the site's origin.
type pageProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *pageProblems) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, s)
}

func (p *pageProblems) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.list
	p.list = nil
	return out
}

// TestPagesInChromium opens every kind of page and the developer portal in
// a real headless Chromium: each renders with a title and a visible heading
// and body, logs no console error (a CSP violation would be one), makes no
// failed request to the site; with IW_SCREENSHOT_DIR set, a screenshot of
// each is left there.
func TestPagesInChromium(t *testing.T) {
	inst := origintest.Start(t)
	ctx := context.Background()
	week := content.ISOWeek(contenttest.Base)
	if _, err := inst.Publisher.SendNewsletter(ctx, week, nil); err != nil {
		t.Fatal(err)
	}
	// An article with every part a page can show: a correction, specs,
	// several countries, a table and a link.
	rich := contenttest.Article(1)
	rich.Slug = "rich-article"
	rich.Specs = []string{"peppol-bis-billing-3", "en-16931"}
	rich.Countries = []string{"be", "de"}
	corrected := contenttest.Base.Add(2 * time.Hour)
	rich.UpdatedAt = &corrected
	rich.Corrections = []content.Correction{{Date: corrected, Text: "An earlier version gave the wrong go-live date."}}
	rich.Body = "Intro paragraph with a [link](https://peppol.org/).\n\n## A heading\n\n| Country | Status |\n|---|---|\n| Belgium | live |\n\n- one\n- two\n"
	if _, err := inst.Publisher.SyncArticle(ctx, rich); err != nil {
		t.Fatal(err)
	}

	bctx := browser(t)
	site, _ := url.Parse(inst.SiteRoot)
	problems := &pageProblems{}
	var icons atomic.Int32 // answers of /favicon.ico
	// One ordered listener for every kind of trouble. The browser context
	// enables the runtime, log and network domains when it attaches.
	err := chromedp.Listen(bctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" || ev.Type == "warning" || ev.Type == "assert" {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems.add("console " + string(ev.Type) + ": " + strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems.add("exception: " + ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			// Content-Security-Policy violations and failed loads are
			// reported here, not through console calls.
			if ev.Entry.Level == "error" || ev.Entry.Level == "warning" {
				problems.add("log " + string(ev.Entry.Source) + " " + string(ev.Entry.Level) + ": " + ev.Entry.Text + " " + ev.Entry.URL)
			}
		case *network.EventLoadingFailed:
			problems.add("request failed: " + ev.ErrorText)
		case *network.EventResponseReceived:
			if strings.HasSuffix(ev.Response.URL, "/favicon.ico") && ev.Response.Status == 200 {
				icons.Add(1)
			}
			u, err := url.Parse(ev.Response.URL)
			if err == nil && u.Host == site.Host && ev.Response.Status >= 400 {
				problems.add(fmt.Sprintf("request to the site answered %d: %s", ev.Response.Status, ev.Response.URL))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	testCases := []struct {
		desc, path, wantTitle, wantText string
	}{
		{desc: "home", path: "/", wantTitle: "Invoicewire", wantText: "Latest news"},
		{desc: "home page 2", path: "/?page=2", wantTitle: "page 2", wantText: "Synthetic article"},
		{desc: "section", path: "/section/mandates/", wantTitle: "Mandates", wantText: "Synthetic article"},
		{desc: "audience", path: "/audience/ap/", wantTitle: "accounts payable", wantText: "Synthetic article"},
		{desc: "country", path: "/countries/be/", wantTitle: "Belgium", wantText: "Mandate status"},
		{desc: "article", path: rich.Path() + "/", wantTitle: rich.Title, wantText: "A heading"},
		{desc: "newsletter", path: "/newsletter/" + week + "/", wantTitle: "Invoicewire Weekly", wantText: "In this issue"},
		{desc: "developer portal", path: "/developers", wantTitle: "Developers", wantText: "Quick start"},
		{desc: "mandate timeline", path: "/mandates", wantTitle: "timeline", wantText: "Coming up"},
		{desc: "search form", path: "/search", wantTitle: "Search", wantText: "Question or keywords"},
		{desc: "search results", path: "/search?q=Peppol+BIS+Billing", wantTitle: "Peppol BIS Billing", wantText: "Synthetic article"},
	}
	for _, tc := range testCases {
		t.Run(tc.desc, func(t *testing.T) {
			problems.take()
			if err := chromedp.Do(bctx, chromedp.Navigate(inst.SiteRoot+tc.path), chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
				t.Fatalf("loading %s: %v", tc.path, err)
			}
			title := run(t, bctx, chromedp.Title())
			h1 := run(t, bctx, chromedp.Text(chromedp.CSS("main h1")))
			body := run(t, bctx, chromedp.Text(chromedp.CSS("main")))
			if !strings.Contains(strings.ToLower(title), strings.ToLower(tc.wantTitle)) {
				t.Errorf("title %q, want it to contain %q", title, tc.wantTitle)
			}
			if strings.TrimSpace(h1) == "" {
				t.Error("the main heading is empty")
			}
			if !strings.Contains(strings.ToLower(body), strings.ToLower(tc.wantText)) {
				t.Errorf("the page does not show %q", tc.wantText)
			}
			// Let late events (stylesheet, icon) arrive before judging.
			time.Sleep(200 * time.Millisecond)
			for _, p := range problems.take() {
				t.Error(p)
			}
			screenshot(t, bctx, strings.ReplaceAll(tc.desc, " ", "-")+".png")
		})
	}

	// What has no icon link of its own (a markdown twin, a JSON error) is
	// shown with /favicon.ico, which Chromium asks for: it is there.
	t.Run("favicon", func(t *testing.T) {
		for _, path := range []string{rich.Path() + ".md", "/no/such/page"} {
			problems.take()
			if err := chromedp.Do(bctx, chromedp.Navigate(inst.SiteRoot+path), chromedp.WaitReady("body")); err != nil {
				t.Fatalf("loading %s: %v", path, err)
			}
			time.Sleep(500 * time.Millisecond)
			for _, p := range problems.take() {
				if strings.Contains(p, "favicon") {
					t.Error(p)
				}
			}
		}
		if icons.Load() == 0 {
			t.Error("Chromium never asked for /favicon.ico")
		}
	})

	// Every search landmark has a name of its own, so a page with two
	// (/search: the masthead's and the page's) does not offer two
	// identical "search" landmarks (WCAG 2.1 SC 1.3.1, 2.4.1).
	t.Run("search landmarks", func(t *testing.T) {
		for _, tc := range []struct {
			desc, path string
			want       []string
		}{
			{desc: "a page with the masthead's form", path: "/", want: []string{"Site search"}},
			{desc: "the search page", path: "/search", want: []string{"Site search", "Ask the articles"}},
			{desc: "search results", path: "/search?q=Peppol", want: []string{"Site search", "Ask the articles"}},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				if err := chromedp.Do(bctx, chromedp.Navigate(inst.SiteRoot+tc.path), chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
					t.Fatalf("loading %s: %v", tc.path, err)
				}
				names := run(t, bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("[role=search], search"), el => el.getAttribute("aria-label") || "")`))
				if !slices.Equal(names, tc.want) {
					t.Errorf("%s: search landmarks named %q, want %q", tc.path, names, tc.want)
				}
			})
		}
	})

	// On a narrow screen nothing makes a page scroll sideways: long words,
	// URLs and inline code wrap (preformatted blocks and the timeline
	// scroll inside themselves), and the search forms wrap. 320 CSS px is
	// the width WCAG 2.1 SC 1.4.10 (Reflow) sets.
	t.Run("320px wide", func(t *testing.T) {
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(320, 900)); err != nil {
			t.Fatal(err)
		}
		for _, tc := range testCases {
			if err := chromedp.Do(bctx, chromedp.Navigate(inst.SiteRoot+tc.path), chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
				t.Fatalf("loading %s: %v", tc.path, err)
			}
			type widths struct {
				Scroll, View float64
				Widest       string
			}
			w := run(t, bctx, chromedp.Evaluate[widths](`(() => {
				const view = document.documentElement.clientWidth;
				let widest = "";
				for (const el of document.querySelectorAll("body *")) {
					if (el.getBoundingClientRect().right > view + 1 && !el.closest("pre, .timeline-figure")) { widest = el.tagName + "." + el.className + ": " + el.textContent.slice(0, 60); break; }
				}
				return {Scroll: document.documentElement.scrollWidth, View: view, Widest: widest};
			})()`))
			if w.Scroll > w.View {
				t.Errorf("%s scrolls sideways at 320px: %v wide in a %v viewport (%s)", tc.path, w.Scroll, w.View, w.Widest)
			}
		}
	})
}
