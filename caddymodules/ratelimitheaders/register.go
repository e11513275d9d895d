package ratelimitheaders

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/invoicewire/invoicewire/internal/apierror"
	"github.com/invoicewire/invoicewire/internal/httpheader"
)

// countRegistration counts a registration against its address's register
// budget. Registering is what mints tokens, so it has a budget of its own,
// far smaller and over a longer window than the ordinary one
// (docs/decisions.md, "Rate-limit budgets"). The answer names both
// policies in RateLimit-Policy and RateLimit (a List each,
// draft-ietf-httpapi-ratelimit-headers-10 §3); the legacy fields, which
// hold one value, follow the register budget once it is the tighter.
//
// The budget counts clients created, but a registration is counted here,
// before it is passed on, so that requests arriving together cannot all
// pass before any is counted. The registration returned gives the unit
// back (settle) once the answer shows no client was created; a 429 made
// here keeps its count.
//
// Over the budget, a registration with an Idempotency-Key may be the retry
// of one that created its client, whose answer the client must be able to
// get again (docs/decisions.md, "Idempotency-Key"). It is passed on marked
// httpheader.ReplayOnly, so the origin answers only with the stored
// replay and creates nothing; any other answer is replaced by the 429
// (serveReplayOnly).
func (h *Handler) countRegistration(w http.ResponseWriter, r *http.Request, b *budget, addr string) (*registration, error) {
	// Only the edge may mark a registration so.
	r.Header.Del(httpheader.ReplayOnly)
	key := hashOf("r:" + addr)
	d := h.regLim.takeHash(key, h.RegisterQuota)
	hdr := w.Header()
	reg := &registration{
		h: h, hash: key, window: d.window,
		item:      hdr["Ratelimit"],
		limit:     hdr["Ratelimit-Limit"],
		remaining: hdr["Ratelimit-Remaining"],
		reset:     hdr["Ratelimit-Reset"],
	}
	hdr["Ratelimit-Policy"] = []string{b.policyValue[0] + ", " + h.regPolicy}
	t := reg.writeFields(hdr, d)
	if d.allowed {
		return reg, nil
	}
	// The window in seconds, as the ordinary 429 and RateLimit-Policy's w
	// give it (Validate keeps it whole seconds); a Go duration ("1h0m0s")
	// means nothing to a client.
	e := apierror.New(http.StatusTooManyRequests,
		"Too many registrations from this address: "+strconv.FormatInt(h.RegisterQuota, 10)+" per "+strconv.FormatInt(int64(time.Duration(h.RegisterWindow)/time.Second), 10)+" seconds.",
		"Reuse the clients you registered (a claim renews a client); wait for Retry-After seconds to register another.")
	e.Header = http.Header{"Retry-After": {t}}
	if len(r.Header.Values("Idempotency-Key")) > 0 {
		httpheader.SetForOrigin(r.Header, httpheader.ReplayOnly, "1")
		reg.refusal = e
		reg.settled = true // no unit was taken, so none is given back
		return reg, nil
	}
	return nil, refuse(e)
}

// registration is one registration counted against the register budget
// and passed on: the unit it took, and the ordinary budget's fields as they
// stood before the register budget was added to them, to write the fields
// again after a refund.
type registration struct {
	h      *Handler
	hash   uint64 // the address's register key, hashed
	window uint32 // the window it was counted in
	// The ordinary budget's RateLimit item and legacy fields.
	item, limit, remaining, reset []string
	settled                       bool
	// refusal is the register budget's 429 of a registration passed on
	// for its replay only: the answer unless the origin replays one.
	refusal *apierror.Error
}

// writeFields adds the register budget's item, at d, to the RateLimit
// List, and points the legacy fields at whichever budget is the tighter.
// It returns the register budget's reset, in seconds.
func (reg *registration) writeFields(hdr http.Header, d decision) string {
	h := reg.h
	t := strconv.FormatInt(int64((d.reset+time.Second-1)/time.Second), 10)
	rem := strconv.FormatInt(d.remaining, 10)
	var ordinaryItem string
	if len(reg.item) > 0 {
		ordinaryItem = reg.item[0]
	}
	hdr["Ratelimit"] = []string{ordinaryItem + ", " + h.regItemPrefix + ";r=" + rem + ";t=" + t}
	var ordinary string
	if len(reg.remaining) > 0 {
		ordinary = reg.remaining[0]
	}
	if o, err := strconv.ParseInt(ordinary, 10, 64); err != nil || d.remaining < o || !d.allowed {
		hdr["Ratelimit-Limit"] = []string{strconv.FormatInt(h.RegisterQuota, 10)}
		hdr["Ratelimit-Remaining"] = []string{rem}
		hdr["Ratelimit-Reset"] = []string{t}
	} else {
		hdr["Ratelimit-Limit"] = reg.limit
		hdr["Ratelimit-Remaining"] = reg.remaining
		hdr["Ratelimit-Reset"] = reg.reset
	}
	return t
}

// settle is called once with the answer's final status and header fields,
// before they are sent when the answer is written through the limiter, or
// before handle_errors writes them when the handlers returned an error.
// An answer that created no client gives the registration's unit back: a
// replay of a stored answer (Idempotency-Replayed: true; docs/decisions.md,
// "Idempotency-Key"), or any status outside 2xx (a refused body, a 409
// while the first request under the key runs, a 422, a 5xx, an origin's
// 429). The fields then show the budget after the refund.
func (reg *registration) settle(code int, hdr http.Header) {
	if reg.settled {
		return
	}
	reg.settled = true
	if code >= 200 && code <= 299 && hdr.Get("Idempotency-Replayed") != "true" {
		return
	}
	h := reg.h
	if d, ok := h.regLim.giveBack(reg.hash, reg.window, h.RegisterQuota); ok {
		d.allowed = true // the request itself was admitted
		reg.writeFields(hdr, d)
	}
}

// serveReplayOnly passes on a registration over the register budget that
// carries an Idempotency-Key (countRegistration). A replay of a stored
// answer (2xx with Idempotency-Replayed: true) is sent as it came; any
// other answer is discarded, header fields and body, and the client gets
// the register budget's 429, as it would have without the key. The
// request is counted in decisions_total, for the client kind, as what the
// client got: allowed when replayed, limited when refused.
func serveReplayOnly(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, reg *registration, kind string) error {
	before := w.Header().Clone()
	rw := &replayOnlyWriter{statusWriter: statusWriter{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}}}
	err := next.ServeHTTP(rw, r)
	refused := rw.discard || rw.code == 0
	countDecision(kind, refused)
	if refused {
		hdr := w.Header()
		clear(hdr)
		for k, v := range before {
			hdr[k] = v
		}
		return refuse(reg.refusal)
	}
	responses.inc(finalStatus(rw.code, err))
	return err
}

// replayOnlyWriter writes an answer through only when it is a replay; it
// discards any other, and flushes nothing before it knows which.
type replayOnlyWriter struct {
	statusWriter
	discard bool
}

func (w *replayOnlyWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		if code > 299 || w.Header().Get("Idempotency-Replayed") != "true" {
			w.code, w.discard = code, true
			return
		}
	}
	if w.discard {
		return
	}
	w.statusWriter.WriteHeader(code)
}

func (w *replayOnlyWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.discard {
		return len(b), nil
	}
	return w.statusWriter.Write(b)
}

func (w *replayOnlyWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.discard {
		return io.Copy(io.Discard, src)
	}
	return w.statusWriter.ReadFrom(src)
}

// FlushError keeps a flush (http.ResponseController) from sending the
// header before the status tells whether the answer is a replay.
func (w *replayOnlyWriter) FlushError() error {
	if w.code == 0 || w.discard {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}
