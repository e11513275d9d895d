// Package config reads Invoicewire's IW_* environment variables. Every
// variable is documented, with its default, in the README's table; keep the
// two in step.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicewire/invoicewire/internal/netguard"
	"github.com/invoicewire/invoicewire/internal/signing"
)

// Config is the configuration shared by the binaries. Each binary uses the
// fields it needs.
type Config struct {
	// PublicURL is {site_root}: every absolute URL the service emits is built
	// from it (IW_PUBLIC_URL).
	PublicURL string
	// RedisURL is redis://, rediss:// or redis+cluster://host:port,... (IW_REDIS_URL).
	RedisURL string
	// OriginAddr is where the origin listens (IW_ORIGIN_ADDR).
	OriginAddr string
	// OriginMetricsAddr is the origin's private /metrics listener (IW_ORIGIN_METRICS_ADDR).
	OriginMetricsAddr string
	// EdgePort is the edge's public port (IW_EDGE_PORT); the edge reads it
	// itself, the others to keep webhooks off it.
	EdgePort string
	// EdgeAdminAddr is the edge's admin API and /metrics (IW_EDGE_ADMIN_ADDR).
	EdgeAdminAddr string
	// EdgeMetricsPort is the production edge's loopback /metrics listener
	// (IW_EDGE_METRICS_PORT); read here only to keep webhooks off it.
	EdgeMetricsPort string
	// RateLimitRedisURL is the edges' Redis for rate-limit counts
	// (IW_RATELIMIT_REDIS_URL); read here only to keep webhooks off it.
	RateLimitRedisURL string
	// OriginCacheBytes bounds the origin's in-process response cache (IW_ORIGIN_CACHE_BYTES).
	OriginCacheBytes int64
	// LogLevel is debug, info, warn or error (IW_LOG_LEVEL).
	LogLevel string
	// ShutdownGrace is how long a stopping process waits for in-flight work (IW_SHUTDOWN_GRACE).
	ShutdownGrace time.Duration

	// SigningKey is the service's Ed25519 signing key as the base64url
	// encoding of its 32-byte seed (IW_SIGNING_KEY). Empty means the key is
	// generated at first start and shared through Redis (docs/decisions.md, agent surfaces).
	SigningKey string
	// IDJAGIssuers lists the identity providers whose ID-JAG assertions
	// agent-auth trusts, with their keys (IW_IDJAG_ISSUERS): a JSON array of
	// {"issuer","jwks"} objects, or the path of a file holding one.
	IDJAGIssuers string
	// MCPAllowedOrigins are the origins browser pages may call /mcp from
	// (IW_MCP_ALLOWED_ORIGINS, comma-separated; "*" allows every origin).
	// Empty: only PublicURL's own origin. Programs send no Origin and are
	// not affected.
	MCPAllowedOrigins []string
	// WebhookAllowCIDRs are non-public networks webhook receivers may
	// nevertheless be in; http:// receivers are accepted only inside them
	// (IW_WEBHOOK_ALLOW_CIDRS, comma-separated; docs/decisions.md (subscriptions), docs/decisions.md (delivery)).
	WebhookAllowCIDRs []netip.Prefix
	// WebhookRetrySchedule is the delay before each retry of a failed
	// delivery (IW_WEBHOOK_RETRY_SCHEDULE, comma-separated durations; docs/decisions.md (delivery)).
	WebhookRetrySchedule []time.Duration
	// WebhookDisableAfter disables a subscription that has failed for this
	// long without a success (IW_WEBHOOK_DISABLE_AFTER; docs/decisions.md (delivery)).
	WebhookDisableAfter time.Duration
	// WebhookDeadLetterMax caps the dead-letter stream (IW_WEBHOOK_DEAD_LETTER_MAX).
	WebhookDeadLetterMax int64
	// WorkerMetricsAddr is the worker's private /metrics listener (IW_WORKER_METRICS_ADDR).
	WorkerMetricsAddr string
	// WorkerConcurrency bounds the deliveries one worker has in flight (IW_WORKER_CONCURRENCY).
	WorkerConcurrency int
	// WorkerPerReceiver bounds the deliveries one worker has in flight to
	// one receiver host:port, so a hanging receiver cannot take every
	// slot (IW_WORKER_PER_RECEIVER; docs/decisions.md, "Per-receiver bound").
	WorkerPerReceiver int
	// WorkerLease is how long a claimed delivery stays invisible to other
	// workers; a crashed worker's deliveries are retried after it (IW_WORKER_LEASE).
	WorkerLease time.Duration
	// WorkerClaimIdle is how long an event may sit unacknowledged with a
	// consumer before another worker claims it (IW_WORKER_CLAIM_IDLE).
	WorkerClaimIdle time.Duration
}

// DefaultRetrySchedule is docs/decisions.md (delivery)'s schedule.
var DefaultRetrySchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 12 * time.Hour,
}

// Defaults are the values used when a variable is unset.
var Defaults = Config{
	PublicURL:         "http://localhost:8080",
	RedisURL:          "redis://127.0.0.1:6399/0",
	OriginAddr:        "127.0.0.1:8081",
	OriginMetricsAddr: "127.0.0.1:8091",
	EdgePort:          "8080",
	EdgeAdminAddr:     "127.0.0.1:2019",
	EdgeMetricsPort:   "9180",
	OriginCacheBytes:  64 << 20,
	LogLevel:          "info",
	ShutdownGrace:     10 * time.Second,

	WebhookRetrySchedule: DefaultRetrySchedule,
	WebhookDisableAfter:  72 * time.Hour,
	WebhookDeadLetterMax: 10000,
	WorkerMetricsAddr:    "127.0.0.1:8082",
	WorkerConcurrency:    64,
	WorkerPerReceiver:    8,
	WorkerLease:          30 * time.Second,
	WorkerClaimIdle:      60 * time.Second,
}

// FromEnv reads the configuration from the environment, falling back to
// Defaults, and checks it.
func FromEnv() (Config, error) {
	return FromLookup(os.LookupEnv)
}

// FromLookup is FromEnv with the environment given as a lookup function, for
// tests.
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	c := Defaults
	str := func(name string, into *string) { lookupString(lookup, name, into) }
	str("IW_PUBLIC_URL", &c.PublicURL)
	c.lookupPorts(lookup)
	str("IW_LOG_LEVEL", &c.LogLevel)
	if v, ok := lookup("IW_ORIGIN_CACHE_BYTES"); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1<<20 {
			return c, fmt.Errorf("config: IW_ORIGIN_CACHE_BYTES must be an integer of at least 1048576, got %q", v)
		}
		c.OriginCacheBytes = n
	}
	if v, ok := lookup("IW_SHUTDOWN_GRACE"); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("config: IW_SHUTDOWN_GRACE must be a duration such as 10s, got %q", v)
		}
		c.ShutdownGrace = d
	}
	if v, ok := lookup("IW_MCP_ALLOWED_ORIGINS"); ok && strings.TrimSpace(v) != "" {
		c.MCPAllowedOrigins = nil
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if u, err := url.Parse(part); part != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/")) {
				return c, fmt.Errorf("config: IW_MCP_ALLOWED_ORIGINS must be comma-separated origins such as https://app.example, or *, got %q", part)
			}
			c.MCPAllowedOrigins = append(c.MCPAllowedOrigins, strings.TrimRight(part, "/"))
		}
	}
	str("IW_SIGNING_KEY", &c.SigningKey)
	str("IW_IDJAG_ISSUERS", &c.IDJAGIssuers)
	if v, ok := lookup("IW_WEBHOOK_ALLOW_CIDRS"); ok && strings.TrimSpace(v) != "" {
		c.WebhookAllowCIDRs = nil
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			p, err := netip.ParsePrefix(part)
			if err != nil {
				// A bare address allows exactly that address.
				a, aerr := netip.ParseAddr(part)
				if aerr != nil {
					return c, fmt.Errorf("config: IW_WEBHOOK_ALLOW_CIDRS must be comma-separated CIDRs such as 127.0.0.0/8, got %q", part)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.WebhookAllowCIDRs = append(c.WebhookAllowCIDRs, p.Masked())
		}
	}
	if v, ok := lookup("IW_WEBHOOK_RETRY_SCHEDULE"); ok && strings.TrimSpace(v) != "" {
		c.WebhookRetrySchedule = nil
		for part := range strings.SplitSeq(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(part))
			if err != nil || d <= 0 {
				return c, fmt.Errorf("config: IW_WEBHOOK_RETRY_SCHEDULE must be comma-separated positive durations such as 5s,30s,2m, got %q", v)
			}
			c.WebhookRetrySchedule = append(c.WebhookRetrySchedule, d)
		}
	}
	durations := []struct {
		name string
		into *time.Duration
	}{
		{"IW_WEBHOOK_DISABLE_AFTER", &c.WebhookDisableAfter},
		{"IW_WORKER_LEASE", &c.WorkerLease},
		{"IW_WORKER_CLAIM_IDLE", &c.WorkerClaimIdle},
	}
	for _, d := range durations {
		if v, ok := lookup(d.name); ok && v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return c, fmt.Errorf("config: %s must be a positive duration such as 30s, got %q", d.name, v)
			}
			*d.into = dur
		}
	}
	ints := []struct {
		name string
		min  int64
		into func(int64)
	}{
		{"IW_WEBHOOK_DEAD_LETTER_MAX", 1, func(n int64) { c.WebhookDeadLetterMax = n }},
		{"IW_WORKER_CONCURRENCY", 1, func(n int64) { c.WorkerConcurrency = int(n) }},
		{"IW_WORKER_PER_RECEIVER", 1, func(n int64) { c.WorkerPerReceiver = int(n) }},
	}
	for _, n := range ints {
		if v, ok := lookup(n.name); ok && v != "" {
			i, err := strconv.ParseInt(v, 10, 64)
			if err != nil || i < n.min {
				return c, fmt.Errorf("config: %s must be an integer of at least %d, got %q", n.name, n.min, v)
			}
			n.into(i)
		}
	}
	if err := c.checkPorts(); err != nil {
		return c, err
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return c, fmt.Errorf("config: IW_PUBLIC_URL must be an absolute http(s) URL without path or query, got %q", c.PublicURL)
	}
	if c.SigningKey != "" {
		if _, err := signing.ParseSeed(c.SigningKey); err != nil {
			// Never echo the value: it is a private key.
			return c, fmt.Errorf("config: IW_SIGNING_KEY must be base64url of a 32-byte Ed25519 seed")
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("config: IW_LOG_LEVEL must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return c, nil
}

// OwnPortsFromEnv is OwnPorts of the configuration in the environment,
// reading and checking only the variables OwnPorts uses (OwnPortsFromLookup).
func OwnPortsFromEnv() ([]uint16, error) {
	return OwnPortsFromLookup(os.LookupEnv)
}

// OwnPortsFromLookup is OwnPorts of the configuration lookup gives, with
// only the variables OwnPorts uses read and checked (the listeners' and
// the Redis URLs'), as FromLookup checks them. It is for a process that
// needs nothing else of the configuration, the edge's bot_auth fetch
// fence: a malformed variable only another process reads then cannot
// stop it, while a malformed port is still refused with its variable's
// name rather than left out of the fence.
func OwnPortsFromLookup(lookup func(string) (string, bool)) ([]uint16, error) {
	c := Defaults
	c.lookupPorts(lookup)
	if err := c.checkPorts(); err != nil {
		return nil, err
	}
	return c.OwnPorts(), nil
}

// lookupString sets *into to the variable name's value, trimmed, when it
// is set and not blank.
func lookupString(lookup func(string) (string, bool), name string, into *string) {
	if v, ok := lookup(name); ok && strings.TrimSpace(v) != "" {
		*into = strings.TrimSpace(v)
	}
}

// lookupPorts reads the variables OwnPorts uses into c.
func (c *Config) lookupPorts(lookup func(string) (string, bool)) {
	lookupString(lookup, "IW_REDIS_URL", &c.RedisURL)
	lookupString(lookup, "IW_ORIGIN_ADDR", &c.OriginAddr)
	lookupString(lookup, "IW_ORIGIN_METRICS_ADDR", &c.OriginMetricsAddr)
	lookupString(lookup, "IW_EDGE_PORT", &c.EdgePort)
	lookupString(lookup, "IW_EDGE_ADMIN_ADDR", &c.EdgeAdminAddr)
	lookupString(lookup, "IW_EDGE_METRICS_PORT", &c.EdgeMetricsPort)
	lookupString(lookup, "IW_RATELIMIT_REDIS_URL", &c.RateLimitRedisURL)
	lookupString(lookup, "IW_WORKER_METRICS_ADDR", &c.WorkerMetricsAddr)
}

// checkPorts checks the listeners' addresses, where the variable can be
// named, and because the fences of OwnPorts would drop a port that does
// not parse and let a webhook delivery or a key-directory fetch reach
// that listener.
func (c *Config) checkPorts() error {
	if _, err := parsePort(c.EdgePort, false); err != nil {
		return fmt.Errorf("config: IW_EDGE_PORT must be a port number such as 8080, got %q: %w", c.EdgePort, err)
	}
	if _, err := parsePort(c.EdgeMetricsPort, false); err != nil {
		return fmt.Errorf("config: IW_EDGE_METRICS_PORT must be a port number such as 9180, got %q: %w", c.EdgeMetricsPort, err)
	}
	if !strings.HasPrefix(c.EdgeAdminAddr, "unix/") {
		if err := checkHostPort(c.EdgeAdminAddr, false); err != nil {
			return fmt.Errorf("config: IW_EDGE_ADMIN_ADDR must be host:port such as 127.0.0.1:2019, or a unix socket such as unix//run/invoicewire-edge/admin.sock|0600, got %q: %w", c.EdgeAdminAddr, err)
		}
	}
	listeners := []struct{ name, addr string }{
		{"IW_ORIGIN_ADDR", c.OriginAddr},
		{"IW_ORIGIN_METRICS_ADDR", c.OriginMetricsAddr},
		{"IW_WORKER_METRICS_ADDR", c.WorkerMetricsAddr},
	}
	for _, l := range listeners {
		// Port 0 (any free port) is for tests.
		if err := checkHostPort(l.addr, true); err != nil {
			return fmt.Errorf("config: %s must be host:port such as 127.0.0.1:8081, got %q: %w", l.name, l.addr, err)
		}
	}
	return nil
}

// parsePort parses a port number, 1 to 65535 (0 too when zeroOK).
func parsePort(p string, zeroOK bool) (uint16, error) {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0, errors.New("not a port number")
	}
	if n == 0 && !zeroOK {
		return 0, errors.New("port 0")
	}
	return uint16(n), nil
}

// checkHostPort checks a TCP listener's host:port, the host possibly empty
// (every address).
func checkHostPort(addr string, zeroOK bool) error {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	_, err = parsePort(p, zeroOK)
	return err
}

// WebhookPolicy is where webhook deliveries may go: public addresses, the
// networks of IW_WEBHOOK_ALLOW_CIDRS, and on those never a port of the
// service's own listeners (OwnPorts).
func (c Config) WebhookPolicy() netguard.Policy {
	return netguard.Policy{Allow: c.WebhookAllowCIDRs, OwnPorts: c.OwnPorts()}
}

// OwnPorts are the ports the service's processes listen on, as this
// configuration names them: the edge, its admin API and metrics site, the origin and
// the metrics listeners, and every Redis node with its cluster bus port
// (the node's port plus 10000). A webhook to one of them would let a
// subscriber drive the service's own APIs (Caddy's admin API takes a new
// configuration by POST) or scan them through the delivery log.
func (c Config) OwnPorts() []uint16 {
	var ports []uint16
	add := func(p string) {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil && n > 0 && !slices.Contains(ports, uint16(n)) {
			ports = append(ports, uint16(n))
		}
	}
	addAddr := func(hostport string) {
		if _, p, err := net.SplitHostPort(hostport); err == nil {
			add(p)
		}
	}
	add(c.EdgePort)
	add(c.EdgeMetricsPort)
	for _, a := range []string{c.EdgeAdminAddr, c.OriginAddr, c.OriginMetricsAddr, c.WorkerMetricsAddr} {
		addAddr(a)
	}
	for _, redisURL := range []string{c.RedisURL, c.RateLimitRedisURL} {
		u, err := url.Parse(redisURL)
		if err != nil || redisURL == "" {
			continue
		}
		for hp := range strings.SplitSeq(u.Host, ",") {
			if !strings.Contains(hp, ":") {
				hp += ":6379"
			}
			if _, p, err := net.SplitHostPort(hp); err == nil {
				add(p)
				if n, err := strconv.ParseUint(p, 10, 16); err == nil && n+10000 <= 65535 {
					add(strconv.FormatUint(n+10000, 10))
				}
			}
		}
	}
	return ports
}

// BaseURL is {base_url}: the versioned API root.
func (c Config) BaseURL() string { return c.PublicURL + "/api/v1" }
