package worker

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/events"
	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
	"github.com/invoicewire/invoicewire/internal/webhook"
)

// Headers of a delivery (docs/decisions.md, delivery).
const (
	HeaderSignature  = "X-Invoicewire-Signature"
	HeaderEvent      = "X-Invoicewire-Event"
	HeaderDelivery   = "X-Invoicewire-Delivery"
	HeaderWebhookID  = "webhook-id"
	HeaderWebhookTS  = "webhook-timestamp"
	HeaderWebhookSig = "webhook-signature"
)

// signatureLabel names the RFC 9421 signature and its Signature-Agent member.
const signatureLabel = signing.Label

// clients are the HTTP clients deliveries go out with: one per scheme,
// because plain http:// may only reach allow-listed networks.
type clients struct {
	https, http *http.Client
}

func newClients(p netguard.Policy, timeout time.Duration) clients {
	mk := func(httpOnlyAllowlisted bool) *http.Client {
		t := &http.Transport{
			// No proxy from the environment: a proxy would dial on our
			// behalf and bypass the address check.
			Proxy:                 nil,
			DialContext:           p.Dialer(httpOnlyAllowlisted, 5*time.Second).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1000,
			MaxIdleConnsPerHost:   100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ExpectContinueTimeout: time.Second,
			DisableCompression:    true,
		}
		return &http.Client{
			Transport: t,
			Timeout:   timeout,
			// docs/decisions.md (delivery): redirects are not followed; a 3xx is a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return clients{https: mk(false), http: mk(true)}
}

// result is what one attempt came to.
type result struct {
	outcome    string // webhook.Outcome*
	status     int    // 0 when no answer came
	err        string // why it failed
	retryAfter time.Duration
	// timedOut is set when no answer came within the attempt's timeout.
	timedOut bool
	duration time.Duration
	// aborted is set when the worker itself cancelled the attempt while
	// shutting down; the delivery is handed back, not counted as failed.
	aborted bool
}

// attempt sends one delivery of body to sub and classifies the answer.
func (w *Worker) attempt(ctx context.Context, sub *webhook.Subscription, j *webhook.Job, body []byte) result {
	u, err := url.Parse(sub.URL)
	if err != nil {
		return result{outcome: webhook.OutcomeFailed, err: "the subscription URL does not parse"}
	}
	// A subscription stored before its query was normalised on the way in
	// (netguard.CheckURL) may hold a space or a '"' there, which would make
	// the request line malformed: encode it as CheckURL now does.
	if u.RawQuery, err = netguard.EscapeQuery(u.RawQuery); err != nil {
		return result{outcome: webhook.OutcomeFailed, err: "the subscription URL's query " + err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return result{outcome: webhook.OutcomeFailed, err: "the subscription URL is not usable"}
	}
	// Signatures carry the wall-clock time: receivers compare it with
	// theirs (Standard Webhooks allows ±5 min), whatever clock schedules.
	now := time.Now()
	if err := w.sign(req.Header, u, sub.Secret, j, body, now); err != nil {
		return result{outcome: webhook.OutcomeFailed, err: err.Error()}
	}
	c := w.clients.https
	if u.Scheme == "http" {
		c = w.clients.http
	}
	start := time.Now()
	resp, err := c.Do(req)
	d := time.Since(start)
	if err != nil {
		return classifyError(ctx, err, d, w.cfg.Timeout)
	}
	// Drain a little of the body so the connection can be reused; the
	// content is not kept.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	r := result{status: resp.StatusCode, duration: d}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.outcome = webhook.OutcomeDelivered
	default:
		r.outcome = webhook.OutcomeFailed
		r.err = fmt.Sprintf("the receiver answered %d", resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			r.err += " (redirects are not followed)"
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			r.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
		}
	}
	return r
}

func classifyError(ctx context.Context, err error, d, timeout time.Duration) result {
	r := result{outcome: webhook.OutcomeFailed, duration: d}
	var ne net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		r.aborted = true
		r.err = "the worker stopped during the attempt"
	case errors.Is(err, netguard.ErrRefused):
		r.outcome = webhook.OutcomeRefused
		var re *netguard.RefusedError
		if errors.As(err, &re) {
			r.err = "refused: " + re.Error()
		} else {
			r.err = "refused: the address is not public"
		}
	case errors.As(err, &dnsErr):
		r.err = "the receiver's host name did not resolve"
	case errors.As(err, &ne) && ne.Timeout():
		r.timedOut = true
		r.err = fmt.Sprintf("no answer within %s", timeout)
	default:
		r.err = "the connection failed: " + shortError(err)
	}
	return r
}

// shortError strips the request line Go's client puts in front of errors;
// it holds only the URL, which the owner knows, but keeps logs short.
func shortError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// parseRetryAfter reads Retry-After (RFC 9110 §10.2.3): delay-seconds or an
// HTTP-date. Zero means absent, unusable or already past. Both forms are
// capped at maxRetryAfter: a date years ahead would otherwise park the
// delivery past its body's lifetime and past the auto-disable rule, and it
// would be lost without a dead letter (docs/decisions.md, "Retries").
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// maxRetryAfter is the longest wait a receiver's Retry-After can ask for:
// the default schedule's longest step (docs/decisions.md, "Retries").
const maxRetryAfter = 12 * time.Hour

// retryWait is the wait before the retry that follows an attempt ending in
// r, where step is the schedule's delay for that retry already jittered.
// A receiver's Retry-After may lengthen the step up to twice its length
// (never past maxRetryAfter) but never shorten it: a receiver answering
// "Retry-After: 2" to every attempt would otherwise use up the schedule's
// 28 hours in seconds and dead-letter a delivery whose receiver was only
// briefly overloaded. A 429 or a timeout waits at least floor, as the
// receiver is telling us to slow down (Svix's rule; docs/decisions.md,
// "Retries").
func retryWait(step, floor time.Duration, r result) time.Duration {
	d := step
	if r.retryAfter > 0 {
		d = max(step, min(r.retryAfter, 2*step, maxRetryAfter))
	}
	if r.status == http.StatusTooManyRequests || r.timedOut {
		d = max(d, floor)
	}
	return d
}

// sign sets every header of a delivery: the event and delivery ids, the
// HMAC of X-Invoicewire-Signature, the Standard Webhooks trio, and the RFC
// 9421 signature with the service key (docs/decisions.md, delivery).
func (w *Worker) sign(h http.Header, u *url.URL, secret string, j *webhook.Job, body []byte, now time.Time) error {
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Invoicewire-Webhooks/1.0 (+"+w.cfg.SiteRoot+"/developers)")
	h.Set(HeaderEvent, j.EventType)
	h.Set(HeaderDelivery, events.NewID("dlv_", now))
	h.Set(HeaderWebhookID, j.EventID)
	h.Set(HeaderWebhookTS, ts)

	// X-Invoicewire-Signature: HMAC-SHA256 of the raw body keyed by the
	// secret's bytes as given (the contract, GitHub's convention).
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	h.Set(HeaderSignature, "sha256="+hex.EncodeToString(mac.Sum(nil)))

	// webhook-signature: Standard Webhooks v1, HMAC-SHA256 over
	// "id.timestamp.body", keyed by the base64-decoded part of a whsec_
	// secret, else by the secret's bytes.
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil {
			key = b
		}
	}
	sw := hmac.New(sha256.New, key)
	sw.Write([]byte(j.EventID + "." + ts + "."))
	sw.Write(body)
	h.Set(HeaderWebhookSig, "v1,"+base64.StdEncoding.EncodeToString(sw.Sum(nil)))

	// RFC 9421 with the service's Ed25519 key, Web Bot Auth style: the
	// Signature-Agent names our origin, whose signatures directory holds
	// the key, and is itself covered.
	h.Set(signing.HeaderContentDigest, signing.ContentDigest(body))
	agent, err := signing.SignatureAgent(signatureLabel, w.cfg.SiteRoot)
	if err != nil {
		return err
	}
	h.Set(signing.HeaderSignatureAgent, agent)
	req := &http.Request{Method: http.MethodPost, URL: u, Host: u.Host, Header: h}
	err = w.cfg.Key.SignRequest(req, signatureLabel,
		signing.Components("@authority", "content-digest", "content-type", "webhook-id", "webhook-timestamp", "x-invoicewire-event", "signature-agent"),
		signing.Params{Created: now, Expires: now.Add(5 * time.Minute), KeyID: w.cfg.Key.ID, Alg: signing.Alg, Tag: "web-bot-auth"})
	if err != nil {
		return err
	}
	return nil
}

// retryDelay is step's delay with ±jitter, so retries of many deliveries
// that failed together do not arrive together.
func retryDelay(step time.Duration, jitter float64) time.Duration {
	if jitter <= 0 {
		return step
	}
	f := 1 + jitter*(2*rand.Float64()-1)
	return time.Duration(float64(step) * f)
}
