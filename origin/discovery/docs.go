package discovery

import (
	"bytes"
	"embed"
	"fmt"
	"net/http"
	"text/template"

	"github.com/invoicewire/invoicewire/internal/content"
	"github.com/invoicewire/invoicewire/internal/store"
	"github.com/invoicewire/invoicewire/origin/respond"
	"github.com/invoicewire/invoicewire/origin/site"
)

//go:embed docs/*
var docFiles embed.FS

// The text documents are text/template: their output is markdown or plain
// text, never HTML.
var docs = template.Must(template.ParseFS(docFiles, "docs/*"))

type docData struct {
	Site, Base string
	// ContentSignal is robots.txt's Content-Signal line, the same value
	// as the pages' Content-Signal header.
	ContentSignal string
	Articles      []docArticle
}

type docArticle struct {
	Title, URL, Dek string
}

func (s *Documents) doc(name string, data docData) ([]byte, error) {
	data.Site, data.Base, data.ContentSignal = s.SiteRoot, s.baseURL(), site.ContentSignal
	var b bytes.Buffer
	if err := docs.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("discovery: rendering %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// AuthMarkdown answers GET /auth.md: the agent registration walkthrough.
func (s *Documents) AuthMarkdown(r *http.Request) (*respond.Response, error) {
	body, err := s.doc("auth.md", docData{})
	if err != nil {
		return nil, err
	}
	return respond.Bytes(content.MarkdownType, body, store.TagIndex), nil
}

// LLMsTxt answers GET /llms.txt (llmstxt.org): the site for language
// models, with the markdown twins of the 20 newest articles.
func (s *Documents) LLMsTxt(r *http.Request) (*respond.Response, error) {
	p, err := s.Store.ArticleHeads(r.Context(), store.ArticleFilter{}, 0, 20, nil)
	if err != nil {
		return nil, err
	}
	var d docData
	for _, rec := range p.Articles {
		d.Articles = append(d.Articles, docArticle{Title: rec.Title, URL: s.SiteRoot + rec.Path() + ".md", Dek: rec.Dek})
	}
	body, err := s.doc("llms.txt", d)
	if err != nil {
		return nil, err
	}
	return respond.Bytes("text/plain; charset=utf-8", body, store.TagIndex, store.TagList), nil
}

// RobotsTxt answers GET /robots.txt with a Content-Signal line and the
// sitemaps.
func (s *Documents) RobotsTxt(r *http.Request) (*respond.Response, error) {
	body, err := s.doc("robots.txt", docData{})
	if err != nil {
		return nil, err
	}
	return respond.Bytes("text/plain; charset=utf-8", body, store.TagIndex), nil
}
