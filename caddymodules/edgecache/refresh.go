// Background refresh of stale entries within stale-while-revalidate.

package edgecache

import (
	"context"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// refresh revalidates e in the background, once at a time per key. The
// request is rebuilt detached from the client's, which may be gone before
// the origin answers. key is the identity entry's key, where a full
// response is stored; ae, when not identity, is the coding also made from
// it (e is then that coding's entry or the identity entry).
func (h *Handler) refresh(r *http.Request, next caddyhttp.Handler, key string, e *entry, ae string) {
	if _, busy := h.shared.refreshing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Duration(h.RefreshTimeout))
	fr := h.forwardRequest(r, ctx, e)
	// A fresh replacer and variables: the client's request finishes (and
	// its handlers go on using theirs) while this one runs.
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	fr = caddyhttp.PrepareRequest(fr, caddy.NewReplacer(), nil, srv)
	gen := h.shared.generation()
	go func() {
		defer cancel()
		defer h.shared.refreshing.Delete(key)
		defer func() {
			if p := recover(); p != nil {
				refreshes.WithLabelValues("failed").Inc()
				h.logger.Error("background refresh panicked", zap.Any("panic", p))
			}
		}()
		reqTime := h.now()
		rec := &recorder{header: make(http.Header), maxBody: h.MaxEntryBytes, buffer: true,
			storable: func(status int, hdr http.Header) bool { return h.storable(status, hdr, cacheControl{maxAge: -1}) }}
		err := next.ServeHTTP(rec, fr)
		now := h.now()
		switch {
		case err != nil || rec.status >= 500 || rec.status == 0:
			refreshes.WithLabelValues("failed").Inc()
		case rec.status == http.StatusNotModified:
			if fresh := h.revalidated(e, rec.header, reqTime, now); fresh != nil {
				h.shared.put(fresh, gen)
				h.encoded(fresh, ae, fr, gen)
			}
			refreshes.WithLabelValues("not_modified").Inc()
		case rec.storableResponse && !rec.overflow:
			if ne := h.newEntry(key, rec.status, rec.header, rec.body(), reqTime, now); ne != nil {
				ne.vary = e.vary
				ne.uriTag = e.uriTag
				h.shared.put(ne, gen)
				h.encoded(ne, ae, fr, gen)
			}
			refreshes.WithLabelValues("stored").Inc()
		default:
			refreshes.WithLabelValues("failed").Inc()
		}
	}()
}
