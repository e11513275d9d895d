package site

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// MarkdownType is the media type of markdown twins (RFC 7763).
const MarkdownType = content.MarkdownType

// ArticleMarkdown answers GET /<yyyy>/<mm>/<slug>.md: the article as
// markdown with YAML front matter. The year and month must be the article's
// own, so each article has exactly one address; under another year and
// month a published article's twin is a 301 there. The same pattern takes
// /<yyyy>/<mm>/<slug>, the page's address without its slash, which
// redirects to the page.
func (s *Site) ArticleMarkdown(r *http.Request) (*respond.Response, error) {
	year, month, file := r.PathValue("year"), r.PathValue("month"), r.PathValue("file")
	slug, ok := strings.CutSuffix(file, ".md")
	if !ok {
		return s.toArticlePage(r, year, month, file)
	}
	rec, err := s.article(r, year, month, slug)
	if resp, ok := s.toMoved(r, err, ".md"); ok {
		return resp, nil
	}
	if err != nil {
		return nil, err
	}
	body, err := rec.Article.Markdown(s.SiteRoot)
	if err != nil {
		return nil, err
	}
	resp := respond.Bytes(MarkdownType, body, store.TagArticle(slug))
	resp.Vary = "Accept"
	resp.LastModified = rec.LastModified()
	return resp, nil
}

func validYearMonth(year, month string) bool {
	y, err1 := strconv.Atoi(year)
	m, err2 := strconv.Atoi(month)
	return err1 == nil && err2 == nil && len(year) == 4 && len(month) == 2 && y >= 1990 && y <= 9999 && m >= 1 && m <= 12
}

// toArticlePage answers /<yyyy>/<mm>/<slug>, an article page's address
// without its trailing slash, with a redirect to the page (which may answer
// 410 gone), straight to the page's own address when the article's month
// is another, or with the page's 404.
func (s *Site) toArticlePage(r *http.Request, year, month, slug string) (*respond.Response, error) {
	_, err := s.article(r, year, month, slug)
	if resp, ok := s.toMoved(r, err, "/"); ok {
		return resp, nil
	}
	if err != nil {
		if ae := (*apierror.Error)(nil); !errors.As(err, &ae) || ae.Status != http.StatusGone {
			return nil, err
		}
	}
	return respond.Redirect(r, s.SiteRoot, r.URL.EscapedPath()+"/", store.TagArticle(slug)), nil
}

// noArticle is the 404 of an article address with no article: tagged with
// the slug, when it is one, so that publishing it purges the 404.
func (s *Site) noArticle(slug string) error {
	e := apierror.NotFound("No article page at this address.", "Article pages are /<yyyy>/<mm>/<slug>/ and their markdown twins /<yyyy>/<mm>/<slug>.md; find them in the url and markdown_url fields of "+s.SiteRoot+"/api/v1/articles.")
	if content.ValidSlug(slug) {
		e.SurrogateKeys = []string{store.TagArticle(slug)}
	}
	return e
}
