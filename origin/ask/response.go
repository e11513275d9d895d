package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/events"
)

// The request and the answer of POST /ask, and their limits.

// Limits of docs/decisions.md (ask).
const (
	// MaxQueryChars bounds a question, in characters after trimming.
	MaxQueryChars = 500
	// DefaultResults and MaxResults bound the number of articles in an
	// answer (prefer.max_results).
	DefaultResults = 10
	MaxResults     = 50
	// MaxPrev bounds the earlier queries of a conversation that are read.
	MaxPrev = 10
	// SummarizeResults is the number of articles a summarize answer
	// returns unless prefer.max_results says otherwise.
	SummarizeResults = 3
	// maxLocaleBytes bounds a locale tag (RFC 5646 §4.4.1 recommends
	// supporting at least 35 characters).
	maxLocaleBytes = 35
)

// Modes of NLWeb: a list of results, or a summary first and fewer results.
// generate asks for a generated answer; it is answered as summarize, with a
// note saying so, since no generative model is used.
const (
	ModeList      = "list"
	ModeSummarize = "summarize"
	ModeGenerate  = "generate"
)

// generateNote is _meta.note of an answer to mode generate.
const generateNote = "mode generate is answered as summarize: no generative model is used; the summary quotes the articles verbatim."

// Protocol constants of the answer (NLWeb v0.55, docs/decisions.md (ask)).
const (
	protocolVersion = "0.55"
	siteName        = "Invoicewire"
)

// Request is one question.
type Request struct {
	// Query is the question, 1 to MaxQueryChars characters after trimming.
	Query string
	// Locale is a BCP 47 language tag; "" means "en".
	Locale string
	// MaxResults bounds the number of articles, 1 to MaxResults; 0 means
	// DefaultResults.
	MaxResults int
	// RequestID names the request in _meta; "" generates one.
	RequestID string
	// Prev are the conversation's earlier queries, oldest first (NLWeb
	// prev), at most MaxPrev of at most MaxQueryChars each. A follow-up
	// ("and for the self-employed?") is answered in their context.
	Prev []string
	// Mode is the NLWeb mode: "list" (or ""), "summarize" or "generate",
	// which is answered as summarize (no generative model is used).
	Mode string
}

// localeTag is the shape of a BCP 47 tag, loosely: a language subtag and
// alphanumeric subtags (RFC 5646 §2.1), "-" or "_" separated.
var localeTag = regexp.MustCompile(`^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$`)

// normalize checks r against the ask rule's (docs/decisions.md) limits and fills in defaults. Errors are
// *apierror.Error values with status 400.
func (r Request) normalize() (Request, error) {
	r.Query = strings.TrimSpace(r.Query)
	switch n := utf8.RuneCountInString(r.Query); {
	case n == 0:
		return r, apierror.BadRequest("query is empty.", "Send a question of 1 to 500 characters in query.")
	case n > MaxQueryChars:
		return r, apierror.BadRequest(fmt.Sprintf("query has %d characters; at most %d are allowed.", n, MaxQueryChars), "Shorten the question to 500 characters or fewer.")
	}
	r.Locale = strings.TrimSpace(r.Locale)
	if r.Locale == "" {
		r.Locale = "en"
	}
	if len(r.Locale) > maxLocaleBytes || !localeTag.MatchString(r.Locale) {
		return r, apierror.BadRequest("locale is not a language tag.", "Send a BCP 47 language tag such as en or en-GB, or leave locale out.")
	}
	if len(r.Prev) > MaxPrev {
		return r, apierror.BadRequest(fmt.Sprintf("prev has %d queries; at most %d are read.", len(r.Prev), MaxPrev), "Send the last 10 queries of the conversation at most.")
	}
	prev := r.Prev[:0:0]
	for _, q := range r.Prev {
		q = strings.TrimSpace(q)
		if utf8.RuneCountInString(q) > MaxQueryChars {
			return r, apierror.BadRequest(fmt.Sprintf("a query of prev has more than %d characters.", MaxQueryChars), "Shorten each earlier query to 500 characters or fewer.")
		}
		if q != "" {
			prev = append(prev, q)
		}
	}
	r.Prev = prev
	// The values are the OpenAPI document's enum, exactly: a mode in another
	// case is a client mistake. "" is a mode left out (readRequest refuses
	// one sent empty).
	switch r.Mode {
	case "", ModeList, "none":
		r.Mode = ModeList
	case ModeSummarize, ModeGenerate:
	default:
		return r, apierror.BadRequest(fmt.Sprintf("mode %q is not supported.", r.Mode), "Send mode list (the default), summarize or generate, in lower case.")
	}
	switch {
	case r.MaxResults == 0 && r.Mode != ModeList:
		r.MaxResults = SummarizeResults
	case r.MaxResults == 0:
		r.MaxResults = DefaultResults
	case r.MaxResults < 1 || r.MaxResults > MaxResults:
		return r, maxResultsError(r.MaxResults)
	}
	if r.RequestID == "" {
		r.RequestID = newRequestID()
	}
	return r, nil
}

// maxResultsError is the 400 for a prefer.max_results outside 1..MaxResults,
// naming the value sent.
func maxResultsError(n int) error {
	return apierror.BadRequest(fmt.Sprintf("prefer.max_results %d is out of range.", n), fmt.Sprintf("prefer.max_results must be an integer from 1 to %d, or left out for the default.", MaxResults))
}

func newRequestID() string { return events.NewID("req_", time.Now()) }

// Meta is the _meta block of an answer and of every stream event (docs/decisions.md, ask).
type Meta struct {
	ResponseType string `json:"response_type"`
	Version      string `json:"version"`
	RequestID    string `json:"request_id"`
	Locale       string `json:"locale"`
	// LocaleFallback is "en" when the requested locale has no articles and
	// the answer is in English instead.
	LocaleFallback string `json:"locale_fallback,omitempty"`
	// TookMS is the time spent on the answer so far, in milliseconds.
	TookMS float64 `json:"took_ms"`
	// SummaryMethod says how a SearchSummary is made: always by quoting.
	SummaryMethod string `json:"summary_method"`
	// Mode is the mode answered: list or summarize (generate is answered
	// as summarize).
	Mode string `json:"mode"`
	// DecontextualizedQuery is the question as answered when it was read
	// as a follow-up of prev: the query with the subject it continues.
	DecontextualizedQuery string `json:"decontextualized_query,omitempty"`
	// Note says how the answer departs from what was asked.
	Note string `json:"note,omitempty"`
}

// Result is one article of an answer.
type Result struct {
	Type string `json:"@type"`
	URL  string `json:"url"`
	Name string `json:"name"`
	Site string `json:"site"`
	// Score is the relevance on a 0–100 scale: the share of the best score
	// the question allows.
	Score int `json:"score"`
	// Description is the article's sentence that covers most of the
	// question (its dek when none does), at most 300 bytes.
	Description   string    `json:"description"`
	DatePublished time.Time `json:"datePublished"`
	Slug          string    `json:"slug"`
}

// Summary is an extractive summary: sentences quoted verbatim from the
// cited articles, never generated.
type Summary struct {
	Type string `json:"@type"`
	// Text is the quoted sentences joined by spaces.
	Text string `json:"text"`
	// Citations are the URLs of the quoted articles, in order of first use.
	Citations []string `json:"citations"`
	// Sentences are the quotes one by one, each with its article's URL.
	Sentences []Quote `json:"sentences"`
	// Answer is the span of the first sentence that answers the question
	// (a date for "when", an amount for "how much"…); nil when the
	// question asks for no such span or no sentence carries one.
	Answer *AnswerSpan `json:"answer,omitempty"`
}

// AnswerSpan is the exact words of a quoted sentence that answer the
// question.
type AnswerSpan struct {
	// Text is the span, verbatim from Sentence.
	Text string `json:"text"`
	// Sentence is the sentence it is in: the summary's first.
	Sentence string `json:"sentence"`
	// URL is the article the sentence is quoted from.
	URL string `json:"url"`
	// Kind is what the question asked for: when, amount, name or yes-no.
	Kind string `json:"kind"`
	// DatePublished is set as in the Quote of Sentence.
	DatePublished *time.Time `json:"datePublished,omitempty"`
}

// Quote is one sentence of a Summary and the article it comes from.
type Quote struct {
	Text string `json:"text"`
	URL  string `json:"url"`
	// Header is set when Text is a row of a table: the table's header
	// row, verbatim too, which says what each cell of the row is.
	Header string `json:"header,omitempty"`
	// LeadIn is set when Text is an item of a list that continues the
	// sentence before the list: that sentence, verbatim too ("The draft
	// order would:"), without which the item is not a statement.
	LeadIn string `json:"lead_in,omitempty"`
	// DatePublished is set when Text (or LeadIn) places something in
	// time from the day it was written ("next year", "in six weeks"):
	// the article's publication time, which those words count from.
	DatePublished *time.Time `json:"datePublished,omitempty"`
}

// Answer is the answer to a Request.
type Answer struct {
	Meta  Meta
	Query string
	// Summary is nil when the results are not strong enough to quote.
	Summary *Summary
	// Results are the articles, best first; empty when nothing matches.
	Results []Result
}

// Items returns the items of the JSON "results" array and of the stream's
// result events: the summary first when there is one, then the articles.
func (a *Answer) Items() []any {
	items := make([]any, 0, len(a.Results)+1)
	if a.Summary != nil {
		items = append(items, a.Summary)
	}
	for i := range a.Results {
		items = append(items, &a.Results[i])
	}
	return items
}

// MarshalJSON renders the JSON answer of docs/decisions.md (ask):
// {"_meta":…,"query":…,"results":[…]}.
func (a *Answer) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Meta    Meta   `json:"_meta"`
		Query   string `json:"query"`
		Results []any  `json:"results"`
	}{a.Meta, a.Query, a.Items()})
}

// marshal encodes v without HTML escaping: answers are JSON, never embedded
// in HTML, and URLs keep their "&".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
