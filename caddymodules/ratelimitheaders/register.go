package ratelimitheaders

import (
	"net/http"
	"strconv"
	"time"

	"github.com/invoicewire/invoicewire/internal/apierror"
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
// here never reaches the origin and keeps its count.
func (h *Handler) countRegistration(w http.ResponseWriter, r *http.Request, b *budget, addr string) (*registration, error) {
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
