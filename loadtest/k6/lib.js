// Shared helpers of the Invoicewire k6 scenarios (loadtest/k6/*.js).
import { check } from 'k6';

export const BASE = (__ENV.BASE_URL || 'http://localhost:8080').replace(/\/$/, '');
export const API = `${BASE}/api/v1`;

// isJSONError checks the JSON errors rule's (docs/decisions.md) error shape: {"error":{"code","message"}} as
// application/json, never HTML, never empty.
export function isJSONError(res, code) {
  const ct = res.headers['Content-Type'] || '';
  if (!ct.startsWith('application/json')) return false;
  try {
    const e = res.json('error');
    return !!e && typeof e.message === 'string' && (code === undefined || e.code === code);
  } catch (_) {
    return false;
  }
}

// hasRateLimitHeaders checks the rate limit rule's (docs/decisions.md) headers on any response.
export function hasRateLimitHeaders(res) {
  const h = res.headers;
  return /^"default";q=\d+;w=\d+$/.test(h['Ratelimit-Policy'] || '') &&
    /^"default";r=\d+;t=\d+$/.test(h['Ratelimit'] || '') &&
    h['Ratelimit-Limit'] !== undefined && h['Ratelimit-Remaining'] !== undefined && h['Ratelimit-Reset'] !== undefined;
}

// pick returns a random element.
export function pick(xs) {
  return xs[Math.floor(Math.random() * xs.length)];
}

// weighted picks a key of {name: weight}.
export function weighted(table) {
  let total = 0;
  for (const k in table) total += table[k];
  let r = Math.random() * total;
  for (const k in table) {
    r -= table[k];
    if (r < 0) return k;
  }
  return Object.keys(table)[0];
}

// checkOK records the common checks of a successful read.
export function checkOK(res, name) {
  return check(res, {
    [`${name}: 2xx`]: (r) => r.status >= 200 && r.status < 300,
  });
}

function fmtMs(v) {
  return v === undefined ? '-' : v < 1 ? `${(v * 1000).toFixed(0)}µs` : `${v.toFixed(2)}ms`;
}

function pad(s, n) {
  s = String(s);
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

// table renders one row per scenario from a k6 summary: requests, requests/s
// over the scenario's own duration, latency percentiles and error rate. It
// reads the per-scenario sub-metrics that the scenarios' thresholds define.
export function table(data, durations) {
  const rows = [['scenario', 'requests', 'req/s', 'p50', 'p95', 'p99', 'max', 'errors', 'checks']];
  for (const name of Object.keys(durations)) {
    const reqs = data.metrics[`http_reqs{scenario:${name}}`];
    if (!reqs || !reqs.values.count) continue;
    const d = data.metrics[`http_req_duration{scenario:${name}}`].values;
    const f = data.metrics[`http_req_failed{scenario:${name}}`];
    const c = data.metrics[`checks{scenario:${name}}`];
    rows.push([
      name,
      reqs.values.count,
      (reqs.values.count / durations[name]).toFixed(0),
      fmtMs(d.med), fmtMs(d['p(95)']), fmtMs(d['p(99)']), fmtMs(d.max),
      f ? `${(f.values.rate * 100).toFixed(2)}%` : '-',
      c ? `${(c.values.rate * 100).toFixed(2)}%` : '-',
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)) + 2);
  const lines = rows.map((r) => r.map((v, i) => pad(v, widths[i])).join('').trimEnd());
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w - 1)).join(' '));
  const failed = [];
  for (const [m, v] of Object.entries(data.metrics)) {
    for (const [t, ok] of Object.entries(v.thresholds || {})) {
      if (!ok.ok) failed.push(`${m}: ${t}`);
    }
  }
  lines.push('');
  lines.push(failed.length ? `THRESHOLDS FAILED:\n  ${failed.join('\n  ')}` : 'all thresholds passed');
  return lines.join('\n') + '\n';
}
