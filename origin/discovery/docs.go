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
	// TrainingCrawlers are robots.txt's disallowed user agents.
	TrainingCrawlers []string
	Articles         []docArticle
}

type docArticle struct {
	Title, URL, Dek string
}

// TrainingCrawlers are the robots.txt product tokens that their operators
// document as collecting content to train AI models, and for nothing the
// Content-Signal policy (search=yes, ai-input=yes, ai-train=no) allows.
// robots.txt disallows them everything, for crawlers that obey robots.txt
// but not Content-Signal. The same operators' search and user-initiated
// agents (OAI-SearchBot, ChatGPT-User, Claude-SearchBot, Claude-User,
// Googlebot, Applebot, Meta-ExternalFetcher, PerplexityBot) are not named
// and follow the "*" group. Sources, the operators' crawler pages:
//
//   - GPTBot: OpenAI, developers.openai.com/docs/gptbot ("may be used to
//     train our generative AI foundation models"; OAI-SearchBot and
//     ChatGPT-User are separate);
//   - ClaudeBot: Anthropic, support.claude.com "Does Anthropic crawl data
//     from the web" (content "that could potentially contribute to their
//     training"; Claude-SearchBot and Claude-User are separate; the old
//     anthropic-ai token is no longer documented);
//   - Google-Extended: Google, developers.google.com/crawling/docs/
//     crawlers-fetchers/google-common-crawlers (a control token, not a
//     crawler: use of what Googlebot fetched for training Gemini models and
//     for grounding in Gemini Apps and Vertex AI; Google Search, AI
//     Overviews included, goes by Googlebot and is unaffected). Its
//     grounding part is answering, which the policy allows, but it is the
//     only token that keeps the articles out of Gemini's training;
//   - Applebot-Extended: Apple, support.apple.com/119829 (a control token:
//     training Apple's foundation models; Applebot itself still crawls for
//     Siri and Spotlight);
//   - CCBot: Common Crawl, commoncrawl.org/ccbot (an open corpus that model
//     training is its main use);
//   - meta-externalagent: Meta, developers.facebook.com/docs/sharing/
//     webmasters/web-crawlers ("training AI models or improving products by
//     indexing content directly"; Meta-ExternalFetcher is the
//     user-initiated one).
var TrainingCrawlers = []string{"GPTBot", "ClaudeBot", "Google-Extended", "Applebot-Extended", "CCBot", "meta-externalagent"}

func (s *Documents) doc(name string, data docData) ([]byte, error) {
	data.Site, data.Base, data.ContentSignal, data.TrainingCrawlers = s.SiteRoot, s.baseURL(), site.ContentSignal, TrainingCrawlers
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

// RobotsTxt answers GET /robots.txt with a Content-Signal line, a group
// that keeps the AI-training crawlers out (TrainingCrawlers) and the
// sitemaps.
func (s *Documents) RobotsTxt(r *http.Request) (*respond.Response, error) {
	body, err := s.doc("robots.txt", docData{})
	if err != nil {
		return nil, err
	}
	return respond.Bytes("text/plain; charset=utf-8", body, store.TagIndex), nil
}
