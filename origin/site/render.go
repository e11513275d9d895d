package site

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/origin/respond"
)

//go:embed templates/*.html assets/*
var files embed.FS

// HTMLType is the media type of every page.
const HTMLType = "text/html; charset=utf-8"

// ContentSecurityPolicy forbids every script and every third-party
// resource: the pages need no JavaScript. The schema.org JSON-LD block is a
// "data block" (HTML §4.12.1.2: a script element whose type is not a
// JavaScript MIME type), which browsers never execute, so script-src does not
// apply to it and no 'unsafe-inline' or hash is needed. Forms may submit
// only to the site itself (the masthead's search form goes to /search). Images may come from
// any https origin because articles may name an external og:image.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' https: data:; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ContentSignal is the site's AI-use preference, respond.ContentSignal:
// robots.txt's line, and the Content-Signal field the origin's writer adds
// to every page, twin, feed, llms.txt and calendar.
const ContentSignal = respond.ContentSignal

// pageHeaders are the security headers of every HTML page. X-Content-Type-
// Options: nosniff and Content-Signal are added by the origin's writer.
var pageHeaders = http.Header{
	"Content-Security-Policy":    {ContentSecurityPolicy},
	"Referrer-Policy":            {"strict-origin-when-cross-origin"},
	"X-Frame-Options":            {"DENY"},
	"Cross-Origin-Opener-Policy": {"same-origin"},
	"Permissions-Policy":         {"camera=(), microphone=(), geolocation=(), interest-cohort=()"},
}

// markdown renders article bodies: GitHub-flavoured markdown (tables,
// strikethrough, autolinks), heading ids for anchors, and raw HTML left out
// (goldmark's default), so an article cannot inject markup or script.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
)

// RenderMarkdown turns markdown into safe HTML. Renderings are kept in a
// bounded cache keyed by the source text itself, so nothing needs
// invalidating: an edited body is another key. A feed renders the bodies of
// its 50 newest articles, most of them shared with the other feeds, and
// goldmark was half of a feed miss's CPU (docs/scale.md).
func RenderMarkdown(src string) (template.HTML, error) {
	rendered := renderedCache()
	if h, ok := rendered.Get(src); ok {
		return h, nil
	}
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		return "", fmt.Errorf("site: rendering markdown: %w", err)
	}
	// goldmark escapes text and omits raw HTML, so its output is safe.
	h := template.HTML(b.String())
	rendered.Set(src, h, int64(len(src)+len(h)))
	return h, nil
}

// renderedBytes bounds the cache of rendered markdown: about a thousand
// article bodies, the feeds' newest articles many times over.
const renderedBytes = 16 << 20

// renderedCache is the process's cache of rendered markdown, made at first
// use. ristretto hashes a key to 128 bits and keeps no copy of it, so the
// source text costs nothing to keep as the key.
var renderedCache = sync.OnceValue(func() *ristretto.Cache[string, template.HTML] {
	c, err := ristretto.NewCache(&ristretto.Config[string, template.HTML]{
		NumCounters: 10 * renderedBytes / 4096, MaxCost: renderedBytes, BufferItems: 64,
	})
	if err != nil {
		panic(fmt.Sprintf("site: the markdown cache's fixed configuration was refused: %v", err))
	}
	return c
})

// The stylesheet and icon, with a version derived from their bytes so the
// long cache lifetime of /assets never serves an old file after a deploy.
var (
	styleCSS, _ = files.ReadFile("assets/site.css")
	iconSVG, _  = files.ReadFile("assets/icon.svg")
	// AssetsVersion is the ?v= of asset URLs.
	AssetsVersion = func() string {
		h := sha256.New()
		h.Write(styleCSS)
		h.Write(iconSVG)
		return hex.EncodeToString(h.Sum(nil))[:12]
	}()
)

// The favicon: icon.svg drawn at 16, 32 and 48 pixels, as PNG images in
// one ICO file (the form browsers ask /favicon.ico for). Pages name the
// SVG in <link rel="icon">; a browser asks /favicon.ico for what has no
// such link (a markdown twin, a JSON error, a feed shown as text).
var faviconICO, _ = files.ReadFile("assets/favicon.ico")

// FaviconType is the registered media type of ICO files.
const FaviconType = "image/vnd.microsoft.icon"

// FaviconCacheControl keeps the favicon for a day: its address has no
// content version, so a new icon must be able to replace it. An asset asked
// for without the current version (?v=AssetsVersion) is kept as long, for
// the same reason.
const FaviconCacheControl = "public, max-age=86400, stale-while-revalidate=604800"

// Favicon answers GET /favicon.ico.
func (s *Site) Favicon(*http.Request) (*respond.Response, error) {
	resp := respond.Bytes(FaviconType, faviconICO, tagAssets)
	resp.CacheControl = FaviconCacheControl
	return resp, nil
}

// AssetCacheControl lets browsers and caches keep an asset for a year when
// its URL carries the current content version (?v=AssetsVersion): a new
// file then has a new URL.
const AssetCacheControl = "public, max-age=31536000, immutable"

// tagAssets is the surrogate key of the assets (they change only on deploy).
const tagAssets = "assets"

// Asset answers GET /assets/{file}: the stylesheet and the icon.
func (s *Site) Asset(r *http.Request) (*respond.Response, error) {
	var resp *respond.Response
	switch r.PathValue("file") {
	case "site.css":
		resp = respond.Bytes("text/css; charset=utf-8", styleCSS, tagAssets)
	case "icon.svg":
		resp = respond.Bytes("image/svg+xml", iconSVG, tagAssets)
	default:
		return nil, notFoundPage(s.SiteRoot)
	}
	resp.CacheControl = FaviconCacheControl
	if r.URL.Query().Get("v") == AssetsVersion {
		resp.CacheControl = AssetCacheControl
	}
	return resp, nil
}

var funcs = template.FuncMap{
	"date": longDate,
	"iso":  func(t time.Time) string { return t.UTC().Format(isoLayout) },
	"deref": func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	},
	"upper":       strings.ToUpper,
	"label":       label,
	"add":         func(a, b int) int { return a + b },
	"specVersion": specVersion,
}

// specVersion is what a spec's version adds to its name, as the article
// page shows it after the name: the registry's version often repeats the
// name's own ("Peppol BIS Billing 3.0", "3.0 (May 2026 release)") or
// carries parentheses of its own ("1.4.1 (draft)"), so "name (version)"
// read "Peppol BIS Billing 3.0 (3.0 (May 2026 release))". The words the
// name already ends with are dropped, and so are the parentheses around
// what is left; a version the name already contains ("FA(3)" of "KSeF
// FA(3)") adds nothing.
func specVersion(name, version string) string {
	version = strings.TrimSpace(version)
	if version == "" || strings.Contains(name, version) {
		return ""
	}
	words := strings.Fields(name)
	if len(words) == 0 {
		return version
	}
	last := strings.Trim(words[len(words)-1], "()")
	if rest, ok := strings.CutPrefix(version, last+" "); ok && last != "" {
		version = strings.TrimSpace(rest)
		if strings.HasPrefix(version, "(") && strings.HasSuffix(version, ")") && strings.Count(version, "(") == 1 {
			version = version[1 : len(version)-1]
		}
	}
	return version
}

// labels are the human names of section, audience and status values; the
// sections' and audiences' are content's, which their feeds are titled by.
var labels = func() map[string]string {
	m := map[string]string{
		"live": "Live", "phased-rollout": "Phased roll-out", "scheduled": "Scheduled", "planned": "Planned",
		"b2g-only": "B2G only", "reporting-only": "Reporting only", "voluntary": "Voluntary",
	}
	for k, v := range content.AudienceNames {
		m[k] = v
	}
	for k, v := range content.SectionNames {
		m[k] = v
	}
	return m
}()

// label names a section, audience or mandate status for readers. "policy"
// is both a section and an audience; both read "Policy".
func label(v string) string {
	if l, ok := labels[v]; ok {
		return l
	}
	return v
}

// layout is the page chrome every page shares: the "layout" template, which
// calls the page's own "content", and the partials.
var layout = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/partials.html"))

// templates holds one template set per page: the layout plus the page's
// own "content".
var templates = func() map[string]*template.Template {
	pages, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		out[name] = template.Must(template.Must(layout.Clone()).ParseFS(files, p))
	}
	return out
}()

// Link is a <link> or <a> target.
type Link struct {
	Rel, Type, Href, Title string
}

// meta is one <meta> element: Property for Open Graph, Name otherwise.
type meta struct {
	Property, Name, Content string
}

// Head is what the layout puts in <head>, plus the shared navigation; every
// page's data embeds one.
type Head struct {
	SiteRoot    string
	Title       string
	Description string
	Canonical   string
	Alternates  []Link
	// OGType is the page's Open Graph type: "website" unless set
	// ("article" on article pages).
	OGType string
	// OpenGraph are the page's own Open Graph properties, after the ones
	// every page has (OG).
	OpenGraph []meta
	Twitter   []meta
	// JSONLD is the schema.org description of the page, already marshalled.
	JSONLD    template.JS
	CSS, Icon string
	Prev      string
	Next      string
	Nav       []Link
	Current   string
	// Query fills the masthead's search box on /search.
	Query string
}

// NewHead fills the parts every page at path shares.
func (s *Site) NewHead(title, description, path string) Head {
	h := Head{
		SiteRoot:    s.SiteRoot,
		Title:       title,
		Description: description,
		Canonical:   s.SiteRoot + path,
		CSS:         "/assets/site.css?v=" + AssetsVersion,
		Icon:        "/assets/icon.svg?v=" + AssetsVersion,
		Current:     path,
		Alternates: []Link{
			{Rel: "alternate", Type: "application/rss+xml", Href: s.SiteRoot + "/feeds/all.xml", Title: "Invoicewire: all articles (RSS)"},
			{Rel: "alternate", Type: "application/feed+json", Href: s.SiteRoot + "/feeds/all.json", Title: "Invoicewire: all articles (JSON Feed)"},
		},
	}
	for _, sec := range []string{"mandates", "network", "vendors", "policy", "specs", "guides"} {
		h.Nav = append(h.Nav, Link{Href: "/section/" + sec + "/", Title: label(sec)})
	}
	return h
}

// siteName is the og:site_name of every page, and the suffix of titles
// that og:title leaves out.
const siteName = "Invoicewire"

// OG is the page's Open Graph description (ogp.me), the same on every
// page type: its type, the site's name, its title without the site's
// name, its canonical address, its language and its description, then
// the properties the page adds of its own (an article's dates, section,
// tags and image). No og:image is invented for pages without a picture of
// their own.
func (h Head) OG() []meta {
	typ := h.OGType
	if typ == "" {
		typ = "website"
	}
	og := []meta{
		{Property: "og:type", Content: typ},
		{Property: "og:site_name", Content: siteName},
		{Property: "og:title", Content: strings.Replace(h.Title, " · "+siteName, "", 1)},
		{Property: "og:url", Content: h.Canonical},
		{Property: "og:locale", Content: "en_GB"},
	}
	if h.Description != "" {
		og = append(og, meta{Property: "og:description", Content: h.Description})
	}
	return append(og, h.OpenGraph...)
}

// jsonLD marshals a schema.org object for a <script type="application/ld+json">
// block. encoding/json escapes <, > and & as \u003c etc., so the data can
// never close the script element.
func jsonLD(v any) (template.JS, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("site: encoding JSON-LD: %w", err)
	}
	return template.JS(b), nil
}

// render executes the named page template and returns it as a cacheable
// HTML response tagged with keys.
func render(name string, data any, keys ...string) (*respond.Response, error) {
	t, ok := templates[name]
	if !ok {
		return nil, fmt.Errorf("site: no template %q", name)
	}
	return RenderPage(t, data, keys...)
}

// PageTemplate parses a page defined elsewhere (its "content" template, in
// the files of fsys that patterns name) into the site's layout, for pages
// other packages serve in the site's chrome (the developer portal).
func PageTemplate(fsys fs.FS, patterns ...string) (*template.Template, error) {
	t, err := layout.Clone()
	if err != nil {
		return nil, fmt.Errorf("site: cloning the layout: %w", err)
	}
	if _, err := t.ParseFS(fsys, patterns...); err != nil {
		return nil, fmt.Errorf("site: parsing %v: %w", patterns, err)
	}
	return t, nil
}

// RenderPage executes a page template made by PageTemplate (or one of the
// site's own) with data, whose type embeds Head, and returns it as a
// cacheable HTML response with the page security headers, tagged with keys.
func RenderPage(t *template.Template, data any, keys ...string) (*respond.Response, error) {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", data); err != nil {
		return nil, fmt.Errorf("site: rendering %s: %w", t.Name(), err)
	}
	resp := respond.Bytes(HTMLType, b.Bytes(), keys...)
	resp.Header = pageHeaders
	return resp, nil
}
