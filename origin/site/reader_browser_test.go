package site_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/invoicewire/invoicewire/internal/content/contenttest"
)

// screenshot keeps a full-page PNG of the current page under name in
// IW_SCREENSHOT_DIR, for a person to look at the pages a change touched.
// Without it nothing is taken: a full-page capture of the developer
// portal alone took Chromium a minute and a half under make test's load,
// for a file no one would see.
func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("IW_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	shot := run(t, bctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReaderPagesInChromium drives the reader features in a real headless
// Chromium: the timeline's SVG is laid out with a link per source and
// article, the calendar is linked, and the masthead's search form, filled
// in and submitted like a person would, leads to a results page.
func TestReaderPagesInChromium(t *testing.T) {
	inst := startAt(t, readerToday)
	bctx := browser(t)
	milestones := 0
	for _, c := range contenttest.Countries {
		milestones += len(c.Milestones)
	}

	t.Run("timeline", func(t *testing.T) {
		if err := chromedp.Do(bctx, chromedp.Navigate(inst.SiteRoot+"/mandates"), chromedp.WaitVisible(chromedp.CSS("svg.timeline"))); err != nil {
			t.Fatal(err)
		}
		type size struct{ W, H float64 }
		box := run(t, bctx, chromedp.Evaluate[size](`(() => { const r = document.querySelector("svg.timeline").getBoundingClientRect(); return {W: r.width, H: r.height}; })()`))
		if box.W < 300 || box.H < float64(milestones*20) {
			t.Errorf("the timeline is laid out at %.0f×%.0f, too small for %d milestones", box.W, box.H, milestones)
		}
		type tally struct{ Rows, Links, Past, Upcoming, Calendar int }
		counts := run(t, bctx, chromedp.Evaluate[tally](`({
			Rows: document.querySelectorAll("svg.timeline g.milestone").length,
			Links: document.querySelectorAll("svg.timeline a").length,
			Past: document.querySelectorAll("section:has(#past) li.milestone").length,
			Upcoming: document.querySelectorAll("section:has(#upcoming) li.milestone").length,
			Calendar: document.querySelectorAll('a[href$="/calendar/mandates.ics"]').length,
		})`))
		if counts.Rows != milestones || counts.Links != 2*milestones {
			t.Errorf("the SVG has %d rows and %d links, want %d and %d", counts.Rows, counts.Links, milestones, 2*milestones)
		}
		if counts.Past+counts.Upcoming != milestones || counts.Past == 0 || counts.Upcoming == 0 {
			t.Errorf("%d past and %d upcoming milestones listed, want both and %d in all", counts.Past, counts.Upcoming, milestones)
		}
		if counts.Calendar == 0 {
			t.Error("no link to the calendar")
		}
		text := run(t, bctx, chromedp.TextContent(chromedp.CSS("svg.timeline")))
		if !strings.Contains(text, "Today, 23 November 2026") {
			t.Errorf("the drawing does not mark today: %q", text)
		}
		screenshot(t, bctx, "mandate-timeline.png")
	})

	t.Run("search form", func(t *testing.T) {
		if err := chromedp.Do(bctx,
			chromedp.Navigate(inst.SiteRoot+"/"),
			chromedp.WaitVisible(chromedp.CSS("#site-search-q")),
			chromedp.SendKeys(chromedp.CSS("#site-search-q"), "Peppol BIS Billing specification"),
			chromedp.Submit(chromedp.CSS("#site-search-q")),
			chromedp.WaitVisible(chromedp.CSS("ol.search-results")),
		); err != nil {
			t.Fatal(err)
		}
		loc := run(t, bctx, chromedp.Location())
		if !strings.Contains(loc, "/search?q=Peppol+BIS+Billing+specification") {
			t.Errorf("the form went to %s", loc)
		}
		results := run(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("ol.search-results li a").length`))
		if results == 0 {
			t.Error("no result links")
		}
		value := run(t, bctx, chromedp.Value(chromedp.CSS("#search-page-q")))
		if value != "Peppol BIS Billing specification" {
			t.Errorf("the results page's form holds %q", value)
		}
		screenshot(t, bctx, "search-results.png")
	})
}
