package ratelimitheaders

import (
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/invoicewire/invoicewire/internal/apierror"
)

// countRegistration counts a registration against its address's register
// budget. Registering is what mints tokens, so it has a budget of its own,
// far smaller and over a longer window than the ordinary one
// (docs/decisions.md, "Rate-limit budgets"). The answer names both
// policies in RateLimit-Policy and RateLimit (a List each,
// draft-ietf-httpapi-ratelimit-headers-10 §3); the legacy fields, which
// hold one value, follow the register budget once it is the tighter.
func (h *Handler) countRegistration(w http.ResponseWriter, r *http.Request, b *budget, addr string) error {
	d := h.regLim.take(r.Context(), "r:"+addr, h.RegisterQuota)
	t := strconv.FormatInt(int64((d.reset+time.Second-1)/time.Second), 10)
	rem := strconv.FormatInt(d.remaining, 10)
	hdr := w.Header()
	hdr["Ratelimit-Policy"] = []string{b.policyValue[0] + ", " + h.regPolicy}
	hdr["Ratelimit"] = []string{hdr.Get("Ratelimit") + ", " + h.regItemPrefix + ";r=" + rem + ";t=" + t}
	if ordinary, err := strconv.ParseInt(hdr.Get("Ratelimit-Remaining"), 10, 64); err != nil || d.remaining < ordinary || !d.allowed {
		hdr["Ratelimit-Limit"] = []string{strconv.FormatInt(h.RegisterQuota, 10)}
		hdr["Ratelimit-Remaining"] = []string{rem}
		hdr["Ratelimit-Reset"] = []string{t}
	}
	if d.allowed {
		return nil
	}
	limitedIP.Inc()
	e := apierror.New(http.StatusTooManyRequests,
		"Too many registrations from this address: "+strconv.FormatInt(h.RegisterQuota, 10)+" per "+time.Duration(h.RegisterWindow).String()+".",
		"Reuse the clients you registered (a claim renews a client); wait for Retry-After seconds to register another.")
	e.Header = http.Header{"Retry-After": {t}}
	return caddyhttp.Error(http.StatusTooManyRequests, e)
}
