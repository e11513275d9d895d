// Package config reads Invoicewire's IW_* environment variables. Every
// variable is documented, with its default, in the README's table; keep the
// two in step.
package config

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

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
	// OriginCacheBytes bounds the origin's in-process response cache (IW_ORIGIN_CACHE_BYTES).
	OriginCacheBytes int64
	// LogLevel is debug, info, warn or error (IW_LOG_LEVEL).
	LogLevel string
	// ShutdownGrace is how long a stopping process waits for in-flight work (IW_SHUTDOWN_GRACE).
	ShutdownGrace time.Duration
	// SigningKey is the base64url seed of the service's Ed25519 key
	// (IW_SIGNING_KEY); empty means one generated at first start and shared
	// through Redis (package internal/signing).
	SigningKey string
}

// Defaults are the values used when a variable is unset.
var Defaults = Config{
	PublicURL:         "http://localhost:8080",
	RedisURL:          "redis://127.0.0.1:6399/0",
	OriginAddr:        "127.0.0.1:8081",
	OriginMetricsAddr: "127.0.0.1:8091",
	OriginCacheBytes:  64 << 20,
	LogLevel:          "info",
	ShutdownGrace:     10 * time.Second,
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
	str := func(name string, into *string) {
		if v, ok := lookup(name); ok && strings.TrimSpace(v) != "" {
			*into = strings.TrimSpace(v)
		}
	}
	str("IW_PUBLIC_URL", &c.PublicURL)
	str("IW_REDIS_URL", &c.RedisURL)
	str("IW_ORIGIN_ADDR", &c.OriginAddr)
	str("IW_ORIGIN_METRICS_ADDR", &c.OriginMetricsAddr)
	str("IW_LOG_LEVEL", &c.LogLevel)
	str("IW_SIGNING_KEY", &c.SigningKey)
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

// BaseURL is {base_url}: the versioned API root.
func (c Config) BaseURL() string { return c.PublicURL + "/api/v1" }
