package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// window names the stretch of a fault a client request began in.
type window string

const (
	winBefore     window = "before"
	winDown       window = "down"
	winRecovering window = "back 3s"
	winAfter      window = "after"
)

// clock tells writers which window they are in.
type clock struct {
	mu  sync.Mutex
	cur window
}

func (k *clock) set(w window) { k.mu.Lock(); k.cur = w; k.mu.Unlock() }
func (k *clock) now() window  { k.mu.Lock(); defer k.mu.Unlock(); return k.cur }

// outcomes counts what writers saw per window: acknowledged, and refused by
// status (or by the kind of failure when nothing answered).
type outcomes struct {
	mu sync.Mutex
	by map[window]map[string]int
}

func (o *outcomes) add(w window, what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = map[window]map[string]int{}
	}
	if o.by[w] == nil {
		o.by[w] = map[string]int{}
	}
	o.by[w][what]++
}

func (o *outcomes) line(w window) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	for k, n := range o.by[w] {
		parts = append(parts, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// change is one iwctl retract or restore, as the publisher saw it.
type change struct {
	slug, op, reason string
	started          time.Time // monotonic: compared only within this process
	acked, emitted   bool
}

// subscription is one POST /webhooks, as its client saw it.
type subscription struct {
	id, path, token string
	acked           bool
	ackedAt         time.Time
}

// account is a registered client with a token (25 subscriptions at most).
type account struct {
	token string
	subs  int
}

// iwctl runs bin/iwctl with a bound on its time, and says how it ended:
// "ack" (exit 0) or why not, and whether it reported an event emitted.
func (c *cluster) iwctl(args ...string) (what string, emitted bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bin/iwctl", args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "ack", strings.Contains(string(out), "emitted"), nil
	case ctx.Err() != nil:
		return "iwctl timeout", false, fmt.Errorf("iwctl %s: timed out", args[0])
	case errors.As(err, &ee):
		return fmt.Sprintf("iwctl exit %d", ee.ExitCode()), false, fmt.Errorf("iwctl %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return "iwctl error", false, err
}

// newAccount registers a client through the edge and claims its token.
func (c *cluster) newAccount(name string) (*account, string, error) {
	reg, code, err := c.postStatus("/api/v1/agent-auth/register", "", map[string]any{"client_name": name})
	if err != nil {
		return nil, code, err
	}
	claim, code, err := c.postStatus("/api/v1/agent-auth/claim", "", map[string]any{"client_id": reg["client_id"]})
	if err != nil {
		return nil, code, err
	}
	tok, _ := claim["access_token"].(string)
	return &account{token: tok}, "ack", nil
}

// postStatus is post returning what the client saw: "ack" or the status
// (or "no answer").
func (c *cluster) postStatus(path, token string, body any) (map[string]any, string, error) {
	out, err := c.post(path, token, body)
	if err == nil {
		return out, "ack", nil
	}
	var se *statusError
	if errors.As(err, &se) {
		return nil, fmt.Sprintf("%d", se.status), err
	}
	return nil, "no answer", err
}

// statusError is a non-2xx answer of the service.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("%d %s", e.status, e.body) }

// listSubscriptions reads a client's subscriptions through the edge.
func (c *cluster) listSubscriptions(token string) (map[string]bool, error) {
	raw, err := c.send(http.MethodGet, "/api/v1/webhooks/subscriptions", token, nil)
	if err != nil {
		return nil, err
	}
	var l struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("subscriptions list: %w", err)
	}
	ids := map[string]bool{}
	for _, it := range l.Items {
		ids[it.ID] = true
	}
	return ids, nil
}

// receivedEvents is the receiver's set of "<path> <type> <reason>".
func (c *cluster) receivedEvents() map[string]bool {
	resp, err := client.Get("http://" + c.rcv + "/stats?events=1")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var s struct {
		Events []string `json:"events"`
	}
	json.NewDecoder(resp.Body).Decode(&s)
	set := make(map[string]bool, len(s.Events))
	for _, e := range s.Events {
		set[e] = true
	}
	return set
}

// articleStatus is the origin's answer for a slug (bypassing the edge's
// cache) and whether the slug is in the origin's article list.
func (c *cluster) articleStatus(slug string) int {
	resp, err := client.Get("http://" + c.origin + "/api/v1/articles/" + slug)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// listedSlugs walks the origin's whole article list.
func (c *cluster) listedSlugs() (map[string]bool, error) {
	out := map[string]bool{}
	next := "http://" + c.origin + "/api/v1/articles?limit=100"
	for pages := 0; next != "" && pages < 1000; pages++ {
		resp, err := client.Get(next)
		if err != nil {
			return nil, err
		}
		var page struct {
			Next  *string `json:"next"`
			Items []struct {
				Slug string `json:"slug"`
			} `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("article list: %w", err)
		}
		for _, it := range page.Items {
			out[it.Slug] = true
		}
		next = ""
		if page.Next != nil {
			next = strings.Replace(*page.Next, "http://"+c.edge, "http://"+c.origin, 1)
		}
	}
	return out, nil
}
