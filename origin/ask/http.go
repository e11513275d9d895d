package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/origin/respond"
)

// MaxBody bounds the request body (docs/decisions.md (ask): 16 KiB).
const MaxBody = 16 << 10

// Mount is the /ask route for the origin: POST only, through the origin's
// shared writer for handlers that write their own answer (respond.Mount),
// which sets CORS, nosniff, no-store (an answer is computed per request and
// may differ a second later) and answers the preflight and the 405.
func (e *Engine) Mount() respond.Mount {
	return respond.Mount{Methods: []string{http.MethodPost}, Hint: "POST a JSON question to this address; see /openapi.json.", Handler: http.HandlerFunc(e.answer)}
}

// wireRequest is the JSON body of POST /ask (docs/decisions.md (ask), AskRequest in
// openapi.json). Unknown fields are ignored, as NLWeb clients send more
// (site, meta) than this service uses. The earlier queries of a
// conversation and the mode are read where each NLWeb version puts them:
// context.prev and prefer.mode (v0.5 and later), prev, mode and
// generate_mode (the flat parameters of earlier versions).
type wireRequest struct {
	Query   json.RawMessage `json:"query"`
	Locale  *string         `json:"locale"`
	Prev    json.RawMessage `json:"prev"`
	Context *struct {
		Prev json.RawMessage `json:"prev"`
	} `json:"context"`
	Mode         *string `json:"mode"`
	GenerateMode *string `json:"generate_mode"`
	Prefer       *struct {
		Streaming  *bool   `json:"streaming"`
		MaxResults *int    `json:"max_results"`
		Mode       *string `json:"mode"`
	} `json:"prefer"`
}

// ServeHTTP answers {site_root}/ask as the origin does, through Mount.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.Mount().ServeHTTP(w, r) }

// answer answers POST {site_root}/ask as JSON, or as a server-sent event
// stream when the request has Accept: text/event-stream or
// prefer.streaming: true, prefer.streaming deciding when it is sent
// (docs/decisions.md, "Ask"). Every error before the
// stream begins is the contract's JSON error; after it began, an error event
// and then complete.
func (e *Engine) answer(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	w := &statusWriter{ResponseWriter: rw}
	mode := "json"
	defer func() { e.metrics.answered(mode, w.code, time.Since(start)) }()

	h := w.Header()
	// The answer names its request: the one the client sent, or a new id
	// when it sent none or one unfit for a header.
	reqID := requestID(r)
	h.Set("X-Request-Id", reqID)

	req, stream, err := readRequest(r)
	if err != nil {
		e.writeError(w, r, err)
		return
	}
	req.RequestID = reqID
	if req, err = req.normalize(); err != nil {
		e.writeError(w, r, err)
		return
	}
	ix, err := e.Index(r.Context())
	if err != nil {
		e.writeError(w, r, err)
		return
	}
	p := e.begin(r.Context(), ix, req, start)
	defer p.cancel()
	if stream {
		mode = "stream"
		e.stream(w, r, p, start)
		return
	}
	ans, err := e.collect(r.Context(), p, start)
	if err != nil {
		e.writeError(w, r, err)
		return
	}
	body, err := ans.MarshalJSON()
	if err != nil {
		e.writeError(w, r, err)
		return
	}
	body = append(body, '\n')
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// collect finishes an answer begun with begin.
func (e *Engine) collect(ctx context.Context, p *prepared, start time.Time) (*Answer, error) {
	if err := e.rank(ctx, p); err != nil {
		return nil, err
	}
	ans := &Answer{Query: p.req.Query, Summary: p.summary, Results: make([]Result, 0, len(p.hits))}
	for i := range p.hits {
		if err := p.ctx.Err(); err != nil {
			return nil, e.late(ctx, err)
		}
		ans.Results = append(ans.Results, p.result(i))
	}
	ans.Meta = p.meta(start)
	return ans, nil
}

// readRequest decodes and checks the body: 415 for a body that is not JSON,
// 413 over MaxBody, 400 for anything else wrong. stream reports whether the
// client asked for an event stream: prefer.streaming when sent, else Accept.
func readRequest(r *http.Request) (req Request, stream bool, err error) {
	var wr wireRequest
	if _, err := respond.DecodeJSON(r, MaxBody, &wr); err != nil {
		return req, false, err
	}
	if req.Query, err = queryText(wr.Query); err != nil {
		return req, false, err
	}
	if wr.Locale != nil {
		req.Locale = *wr.Locale
		if strings.TrimSpace(req.Locale) == "" {
			return req, false, apierror.BadRequest("locale is empty.", "Send a BCP 47 language tag such as en, or leave locale out.")
		}
	}
	prev := wr.Prev
	if wr.Context != nil && len(bytes.TrimSpace(wr.Context.Prev)) > 0 {
		prev = wr.Context.Prev
	}
	if req.Prev, err = prevQueries(prev); err != nil {
		return req, false, err
	}
	var prefMode *string
	if wr.Prefer != nil {
		prefMode = wr.Prefer.Mode
	}
	for _, m := range []*string{wr.GenerateMode, wr.Mode, prefMode} {
		if m == nil {
			continue
		}
		if *m == "" {
			return req, false, apierror.BadRequest("mode is empty.", "Send mode list (the default), summarize or generate, or leave it out.")
		}
		req.Mode = *m
	}
	stream = acceptsEventStream(r.Header)
	if wr.Prefer != nil {
		if n := wr.Prefer.MaxResults; n != nil {
			// Checked here, as sent: Request.MaxResults 0 means "the
			// default" to Go callers, but a client that sends 0 asks for
			// something out of range and is told so with its own value.
			if *n < 1 || *n > MaxResults {
				return req, false, maxResultsError(*n)
			}
			req.MaxResults = *n
		}
		if wr.Prefer.Streaming != nil {
			// The body's preference is the client's own word for this
			// request; Accept is often a library's default. An explicit
			// prefer.streaming wins either way (docs/decisions.md, Ask).
			stream = *wr.Prefer.Streaming
		}
	}
	return req, stream, nil
}

// queryText reads query: a string, or an NLWeb query object {"text": …}.
func queryText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", apierror.BadRequest("query is missing.", `Send {"query": "your question"}.`)
	}
	var s string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", apierror.BadRequest("query is not a valid string.", `Send {"query": "your question"}.`)
		}
	case '{':
		var obj struct {
			Text json.RawMessage `json:"text"`
		}
		// Strictly, as the body around it: {"teXt": …} is no member of the
		// query object (openapi.json), though encoding/json would take it
		// for text (found by FuzzAskRequest).
		if err := respond.StrictUnmarshal(raw, &obj); err != nil {
			return "", err
		}
		if len(obj.Text) == 0 || obj.Text[0] != '"' || json.Unmarshal(obj.Text, &s) != nil {
			return "", apierror.BadRequest("query.text must be a string.", `Send {"query": "your question"} or {"query": {"text": "your question"}}.`)
		}
	default:
		return "", apierror.BadRequest("query must be a string.", `Send {"query": "your question"} or {"query": {"text": "your question"}}.`)
	}
	return s, nil
}

// prevQueries reads the earlier queries of a conversation, oldest first: an
// array of strings, or one string of comma-separated queries (NLWeb's flat
// prev parameter).
func prevQueries(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	bad := apierror.BadRequest("prev must be an array of strings.", `Send the conversation's earlier queries, oldest first: {"query": "and for SMEs?", "context": {"prev": ["When does Spain require B2B e-invoices?"]}}.`)
	var list []string
	switch raw[0] {
	case '[':
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, bad
		}
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, bad
		}
		list = strings.Split(s, ",")
	default:
		return nil, bad
	}
	return list, nil
}

// acceptsEventStream reports whether Accept names text/event-stream with a
// non-zero quality (RFC 9110 §12.5.1).
func acceptsEventStream(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/event-stream" {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// requestID is the client's X-Request-Id when it is a sensible token (the
// edge sets one), else a new id.
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 128 {
		return newRequestID()
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return newRequestID()
		}
	}
	return id
}

// writeError writes err as the JSON error of docs/decisions.md (JSON errors), unless the client is gone.
func (e *Engine) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // nobody is listening
	}
	ae := apierror.As(err)
	if ae.Status >= 500 {
		if ae.Status == http.StatusServiceUnavailable && ae.Header == nil {
			ae.Header = http.Header{"Retry-After": {"5"}}
		}
		e.log.ErrorContext(r.Context(), "ask: request failed", "err", err, "request_id", w.Header().Get("X-Request-Id"))
	}
	apierror.Write(w, ae)
}

// Stream events (docs/decisions.md, ask). Each event is "event: NAME\ndata: JSON\n\n"; the JSON
// is one line, so one data field carries it (WHATWG HTML §9.2.6).
type (
	streamStart struct {
		Meta Meta `json:"_meta"`
	}
	streamResult struct {
		Index int `json:"index"`
		Item  any `json:"item"`
	}
	streamComplete struct {
		Meta       Meta `json:"_meta"`
		TotalItems int  `json:"total_items"`
	}
	streamError struct {
		Meta  Meta        `json:"_meta"`
		Error streamFault `json:"error"`
	}
	streamFault struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

// stream answers as server-sent events, flushing after each event so the
// edge and the client see every result as soon as it is ready. A client that
// goes away cancels the request's context, which stops the work.
func (e *Engine) stream(w http.ResponseWriter, r *http.Request, p *prepared, start time.Time) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	// Proxies that buffer (nginx and those that copy its convention) pass
	// the stream through unbuffered.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(name string, v any) bool {
		data, err := marshal(v)
		if err != nil {
			e.log.ErrorContext(ctx, "ask: encoding an event", "err", err)
			return false
		}
		var b bytes.Buffer
		b.Grow(len(data) + len(name) + 16)
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteString("\ndata: ")
		b.Write(data)
		b.WriteString("\n\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("start", streamStart{Meta: p.meta(start)}) {
		return
	}
	sent := 0
	fail := func(err error) {
		if ctx.Err() != nil {
			return // the client is gone: nothing to tell
		}
		ae := apierror.As(err)
		if ae.Status >= 500 {
			e.log.ErrorContext(ctx, "ask: stream failed", "err", err, "request_id", p.req.RequestID)
		}
		m := p.meta(start)
		if send("error", streamError{Meta: m, Error: streamFault{Code: ae.Code, Message: ae.Message}}) {
			send("complete", streamComplete{Meta: m, TotalItems: sent})
		}
	}
	if err := e.rank(ctx, p); err != nil {
		fail(err)
		return
	}
	if p.summary != nil {
		if !send("result", streamResult{Index: sent, Item: p.summary}) {
			return
		}
		sent++
	}
	for i := range p.hits {
		if e.resultHook != nil {
			e.resultHook(p.ctx, sent)
		}
		if err := p.ctx.Err(); err != nil {
			fail(e.late(ctx, err))
			return
		}
		res := p.result(i)
		if !send("result", streamResult{Index: sent, Item: &res}) {
			return
		}
		sent++
	}
	send("complete", streamComplete{Meta: p.meta(start), TotalItems: sent})
}
