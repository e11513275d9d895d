// Package metrics registers Invoicewire's Prometheus collectors: the edge
// modules' on the registry Caddy creates for each loaded config, so they
// appear on the admin /metrics next to Caddy's own (docs/architecture.md), and the
// origin's, the ask engine's and the worker's on their process registries.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds cs to reg. A collector that is already registered counts as
// success: every instance of a module in one config registers the same
// package-level collectors, and only the first one gets there (see caddy PR
// #7051, "we've told some users to ignore the duplicate registration error").
// A nil reg (a context without metrics) registers nothing.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				continue
			}
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	return nil
}
