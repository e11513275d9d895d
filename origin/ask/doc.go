// Package ask answers natural-language questions about the archive:
// POST {site_root}/ask (endpoint 16 of the contract, docs/decisions.md (ask)), in the
// style of the NLWeb protocol (v0.55), without a language model.
//
// # Retrieval
//
// An in-memory BM25F index (index.go) covers every published article:
// headline, standfirst, tags and kicker, body, and an entities field that
// carries one synthetic term per country code and linked specification plus
// the section's name. Words are stemmed with the Snowball English stemmer
// and stop words are skipped (analyze.go). A question that names a country
// (by name, demonym, alias or code in capitals) or a tracked specification
// (by name, short name or slug) gets the same synthetic terms (entities.go),
// so it finds the articles the editors filed under them. A mild recency
// boost (at most 10%, halving every six months) favours newer articles.
//
// # Answers
//
// Scores are on a 0–100 scale: the share of the best score the question
// allows. Each result's description is the article sentence that covers
// most of the question. When the best result scores 40 or more, a
// SearchSummary quotes 2–4 sentences verbatim from the best articles, each
// with its article's URL (quote.go); nothing is generated. A question
// nothing answers gets an answer with no results.
//
// # Freshness
//
// The index is immutable and replaced whole (atomic.Pointer) after every
// content change: Engine implements invalidation.Purger, so the origin drives
// it with invalidation.Follow beside its response cache, and Run
// rebuilds in the background. An article named by a change is checked at
// once, and hidden if retracted, before the rebuild completes.
//
// # Using it from Go
//
// The MCP server's ask tool calls the same code as the HTTP endpoint:
//
//	e := ask.New(ask.Config{Store: st, SiteRoot: siteRoot})
//	go e.Run(ctx) // or let origin.Server.Follow run it
//	ans, err := e.Ask(ctx, ask.Request{Query: "When does Belgium require B2B e-invoices?"})
//	// ans.Summary (may be nil), ans.Results (best first), ans.Meta;
//	// json.Marshal(ans) is the JSON answer of docs/decisions.md (ask).
//
// Ask returns *apierror.Error values for a question outside the ask rule's (docs/decisions.md) limits
// (400) or when no index can be built (503), and the context's error when
// ctx ends first. The origin creates one Engine in origin.New; share that
// one rather than building a second index. Engine.Tool adapts it to the
// MCP server's Asker interface (Ask(ctx, query, locale) (any, error)):
//
//	mcp.Server{…, Ask: s.ask.Tool()}
package ask
