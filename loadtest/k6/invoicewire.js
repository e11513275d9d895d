// Invoicewire load tests (issue 9), run by `make loadtest` against the
// `make run` stack. PHASE=load runs the read mix, the spike and the
// authenticated webhook scenario one after the other, with the rate-limit
// quota raised (IW_RATELIMIT_QUOTA) since loopback traffic is one client;
// PHASE=limits runs the rate-limit scenario at the real quota, under
// background load from other clients (sent through X-Forwarded-For, which
// the stack trusts from loopback in that phase). Every scenario is bounded
// in time and rate; everything stays on loopback.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { API, BASE, checkOK, hasRateLimitHeaders, isJSONError, pick, table, weighted } from './lib.js';

const PHASE = __ENV.PHASE || 'load';
const OUT = __ENV.OUT_DIR || 'loadtest/out';
const READ_VUS = parseInt(__ENV.READ_VUS || '16', 10);
const READ_SECONDS = parseInt(__ENV.READ_SECONDS || '30', 10);
const SPIKE_PEAK = parseInt(__ENV.SPIKE_PEAK || '800', 10);
const RECEIVER = __ENV.RECEIVER_URL || 'http://127.0.0.1:8099/hook';

// Scenario durations in seconds (for requests/s in the table).
const durations = PHASE === 'load'
  ? { read_mix: READ_SECONDS, spike: 25, webhooks: 20 }
  : { rate_limit: 20, background: 20 };

const scenarios = PHASE === 'load' ? {
  read_mix: {
    executor: 'constant-vus', exec: 'readMix', vus: READ_VUS, duration: `${READ_SECONDS}s`,
  },
  spike: {
    executor: 'ramping-arrival-rate', exec: 'readMix', startTime: `${READ_SECONDS + 2}s`,
    startRate: 50, timeUnit: '1s', preAllocatedVUs: 50, maxVUs: 400,
    stages: [
      { target: 100, duration: '5s' },
      { target: SPIKE_PEAK, duration: '3s' },
      { target: SPIKE_PEAK, duration: '10s' },
      { target: 100, duration: '7s' },
    ],
  },
  webhooks: {
    executor: 'constant-arrival-rate', exec: 'webhookSubscription', startTime: `${READ_SECONDS + 29}s`,
    rate: 10, timeUnit: '1s', duration: '20s', preAllocatedVUs: 10, maxVUs: 40,
  },
} : {
  rate_limit: {
    executor: 'per-vu-iterations', exec: 'rateLimit', vus: 1, iterations: 1, maxDuration: '20s', startTime: '2s',
  },
  background: {
    executor: 'constant-arrival-rate', exec: 'background', rate: 200, timeUnit: '1s', duration: '20s',
    preAllocatedVUs: 20, maxVUs: 60,
  },
};

const thresholds = {};
for (const name of Object.keys(durations)) {
  // The sub-metrics per scenario, which the summary table reads.
  thresholds[`http_reqs{scenario:${name}}`] = ['count>0'];
  thresholds[`http_req_failed{scenario:${name}}`] = ['rate<0.01'];
  thresholds[`checks{scenario:${name}}`] = ['rate>0.99'];
}
if (PHASE === 'load') {
  thresholds['http_req_duration{scenario:read_mix}'] = ['p(95)<50', 'p(99)<200'];
  thresholds['http_req_duration{scenario:spike}'] = ['p(95)<250', 'p(99)<1000'];
  thresholds['http_req_duration{scenario:webhooks}'] = ['p(95)<250', 'p(99)<1000'];
} else {
  thresholds['http_req_duration{scenario:rate_limit}'] = ['p(99)<250'];
  thresholds['http_req_duration{scenario:background}'] = ['p(95)<100', 'p(99)<250'];
  thresholds['checks{scenario:rate_limit}'] = ['rate==1'];
}

export const options = {
  scenarios,
  thresholds,
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
  discardResponseBodies: false,
  noConnectionReuse: false,
  userAgent: 'invoicewire-loadtest/1.0 (k6)',
};

const serverErrors = new Counter('server_errors');

// setup learns real slugs, countries, specs and feeds from the API and
// drops any kind of address this stack does not serve yet.
export function setup() {
  // Setup reads as its own client: in the limits phase (X-Forwarded-For
  // trusted) it must not spend loopback's budget, which the load phase
  // may have used up in Redis within the same window.
  const me = { headers: { 'X-Forwarded-For': '203.0.113.9' } };
  const get = (url) => http.get(url, me);
  const list = get(`${API}/articles?limit=100`);
  if (list.status !== 200) throw new Error(`GET /api/v1/articles: ${list.status}; is the stack running at ${BASE}?`);
  const articles = list.json('items');
  const countries = get(`${API}/countries`).json('items').map((c) => c.code);
  const specs = get(`${API}/specs`).json('items').map((s) => s.slug);
  let feeds = [];
  const cat = get(`${API}/feeds`);
  if (cat.status === 200) feeds = cat.json('items').map((f) => f.url.replace(/^https?:\/\/[^/]+/, ''));
  const served = (path) => get(`${BASE}${path}`).status === 200;
  if (feeds.length && !served(feeds[0])) {
    console.warn(`feeds not served yet (${feeds[0]}); the read mix leaves them out`);
    feeds = [];
  }
  const mdPaths = articles.map((a) => a.markdown_url.replace(/^https?:\/\/[^/]+/, ''));
  const pagePaths = articles.map((a) => a.url.replace(/^https?:\/\/[^/]+/, ''));
  const ask = http.post(`${BASE}/ask`, JSON.stringify({ query: 'When does Belgium require e-invoicing?' }),
    { headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': '203.0.113.9' } });
  const askServed = ask.status === 200;
  if (!askServed) console.warn(`/ask answered ${ask.status}; the read mix leaves it out`);
  const twin = http.get(`${BASE}${pagePaths[0]}`, { headers: { Accept: 'text/markdown', 'X-Forwarded-For': '203.0.113.9' } });
  const twinServed = twin.status === 200 && (twin.headers['Content-Type'] || '').startsWith('text/markdown');
  const rl = hasRateLimitHeaders(list);
  return {
    slugs: articles.map((a) => a.slug), mdPaths, pagePaths, countries, specs, feeds, askServed, twinServed,
    rateLimited: rl,
  };
}

const sections = ['mandates', 'network', 'vendors', 'policy', 'specs', 'guides'];
const audiences = ['biz', 'ap', 'vendor', 'policy'];
const questions = [
  'When does Belgium require B2B e-invoicing?', 'What is Peppol BIS Billing 3.0?', 'Germany e-invoice receiving obligation',
  'Which countries use clearance models?', 'KSeF Poland deadline', 'France PDP reform timeline',
];

// readMix is one anonymous reader's request, drawn from a realistic mix.
export function readMix(d) {
  const kind = weighted({
    list: 30, article: 25, markdown: 8, twin: d.twinServed ? 4 : 0, feed: d.feeds.length ? 10 : 0,
    countries: 9, specs: 7, misc: 6, ask: d.askServed ? 1 : 0,
  });
  let res;
  const params = { tags: { kind } };
  switch (kind) {
    case 'list': {
      const q = weighted({ plain: 3, section: 3, audience: 2, country: 2, page: 1 });
      const qs = {
        plain: `limit=${pick([10, 25, 50])}`, section: `section=${pick(sections)}`, audience: `audience=${pick(audiences)}`,
        country: `country=${pick(d.countries)}`, page: `limit=10&offset=${pick([10, 20, 30])}`,
      }[q];
      res = http.get(`${API}/articles?${qs}`, params);
      break;
    }
    case 'article': res = http.get(`${API}/articles/${pick(d.slugs)}`, params); break;
    case 'markdown': res = http.get(`${BASE}${pick(d.mdPaths)}`, params); break;
    case 'twin': res = http.get(`${BASE}${pick(d.pagePaths)}`, Object.assign({ headers: { Accept: 'text/markdown' } }, params)); break;
    case 'feed': res = http.get(`${BASE}${pick(d.feeds)}`, params); break;
    case 'countries': res = http.get(Math.random() < 0.3 ? `${API}/countries` : `${API}/countries/${pick(d.countries)}`, params); break;
    case 'specs': res = http.get(Math.random() < 0.3 ? `${API}/specs` : `${API}/specs/${pick(d.specs)}`, params); break;
    case 'misc': res = http.get(pick([`${API}/`, `${API}/sources`, `${API}/feeds`, `${API}/webhooks`]), params); break;
    case 'ask':
      res = http.post(`${BASE}/ask`, JSON.stringify({ query: pick(questions) }),
        Object.assign({ headers: { 'Content-Type': 'application/json' } }, params));
      break;
  }
  if (res.status >= 500) serverErrors.add(1);
  checkOK(res, 'read');
  if (res.status >= 400) {
    check(res, { 'read: errors are JSON': (r) => isJSONError(r) });
  }
}

// Each VU keeps its own agent identity (register + claim once).
let token = null;

function authHeaders(extra) {
  return Object.assign({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, extra || {});
}

// webhookSubscription: an agent with a token subscribes (with an
// Idempotency-Key, replayed once), reads its subscription and deletes it;
// the same POST without a token gets the docs/decisions.md (bearer tokens) 401.
export function webhookSubscription() {
  const json = { headers: { 'Content-Type': 'application/json' } };
  if (!token) {
    const reg = http.post(`${API}/agent-auth/register`, JSON.stringify({ client_name: `k6-vu-${__VU}` }), json);
    check(reg, { 'register: 201': (r) => r.status === 201 });
    const claim = http.post(`${API}/agent-auth/claim`, JSON.stringify({ client_id: reg.json('client_id') }), json);
    check(claim, { 'claim: 200 with a token': (r) => r.status === 200 && !!r.json('access_token') });
    token = claim.json('access_token');
  }
  const body = JSON.stringify({ url: RECEIVER, events: ['article.published', 'article.corrected'] });
  const key = `k6-${__VU}-${__ITER}-${Date.now()}`;
  const created = http.post(`${API}/webhooks`, body, { headers: authHeaders({ 'Idempotency-Key': key }) });
  check(created, {
    'subscribe: 201': (r) => r.status === 201,
    'subscribe: active with id and secret': (r) => r.status === 201 && r.json('status') === 'active' && !!r.json('id') && String(r.json('secret')).startsWith('whsec_'),
    'subscribe: no-store': (r) => (r.headers['Cache-Control'] || '').includes('no-store'),
  });
  const replay = http.post(`${API}/webhooks`, body, { headers: authHeaders({ 'Idempotency-Key': key }) });
  check(replay, {
    'replay: same answer, marked replayed': (r) => r.status === created.status && r.headers['Idempotency-Replayed'] === 'true' && r.body === created.body,
  });
  const anon = http.post(`${API}/webhooks`, body, Object.assign({ responseCallback: http.expectedStatuses(401) }, json));
  check(anon, {
    'no token: 401 JSON with WWW-Authenticate': (r) => r.status === 401 && isJSONError(r, 'unauthorized') && /^Bearer realm="invoicewire"/.test(r.headers['Www-Authenticate'] || ''),
  });
  if (created.status !== 201) return;
  const id = created.json('id');
  const got = http.get(`${API}/webhooks/subscriptions/${id}`, { headers: authHeaders() });
  check(got, { 'read own subscription: 200': (r) => r.status === 200 && r.json('id') === id });
  const del = http.del(`${API}/webhooks/subscriptions/${id}`, null, { headers: authHeaders() });
  check(del, { 'delete: 204': (r) => r.status === 204 });
}

// rateLimit: one client (192.0.2.1) spends its whole budget on a cached
// page while others keep reading; every answer carries the RateLimit
// fields, the budget is exact, and past it come 429 rate_limited JSON
// answers with Retry-After, never cached, while other clients are served.
export function rateLimit(d) {
  if (!d.rateLimited) {
    console.error('no RateLimit headers: the edge is not in front of this stack, nothing to check');
    check(null, { 'rate limit: the edge answers': () => false });
    return;
  }
  const me = { headers: { 'X-Forwarded-For': '192.0.2.1' }, responseCallback: http.expectedStatuses(200, 429) };
  let first = http.get(`${API}/countries`, me);
  const reset = parseInt(first.headers['Ratelimit-Reset'] || '0', 10);
  const quota = parseInt(first.headers['Ratelimit-Limit'] || '0', 10);
  if (reset < 10) {
    // Too close to the end of the window: start on a fresh one so the
    // window does not roll over mid-burst.
    sleep(reset + 1);
    first = http.get(`${API}/countries`, me);
  }
  let allowed = first.status === 200 ? 1 : 0;
  let limited = 0;
  let headersOK = hasRateLimitHeaders(first);
  let limitedOK = true;
  let remainingOK = true;
  let prevRemaining = parseInt(first.headers['Ratelimit-Remaining'], 10);
  for (let i = 0; i < quota + 50 && limited < 50; i++) {
    const r = http.get(`${API}/countries`, me);
    headersOK = headersOK && hasRateLimitHeaders(r);
    if (r.status === 200) {
      allowed++;
      const rem = parseInt(r.headers['Ratelimit-Remaining'], 10);
      remainingOK = remainingOK && rem < prevRemaining;
      prevRemaining = rem;
    } else {
      limited++;
      limitedOK = limitedOK && r.status === 429 && isJSONError(r, 'rate_limited') &&
        parseInt(r.headers['Retry-After'] || '0', 10) > 0 &&
        /;r=0;/.test(r.headers['Ratelimit'] || '') &&
        !(r.headers['Cache-Status'] || '').includes('hit') &&
        (r.headers['Cache-Control'] || '').includes('no-store');
    }
  }
  const other = http.get(`${API}/countries`, { headers: { 'X-Forwarded-For': '192.0.2.2' } });
  console.log(`rate limit: quota ${quota}, allowed ${allowed}, limited ${limited}`);
  check(null, {
    'rate limit: exactly the quota is allowed': () => allowed === quota,
    'rate limit: then 429s': () => limited >= 1,
    'rate limit: RateLimit fields on every answer': () => headersOK,
    'rate limit: remaining counts down': () => remainingOK,
    'rate limit: 429 is rate_limited JSON, Retry-After, r=0, not cached': () => limitedOK,
    'rate limit: another client is still served': () => other.status === 200,
  });
}

// background is the other clients' traffic during the rate-limit check:
// 40 addresses, well under their own budgets.
export function background(d) {
  const ip = `198.51.100.${1 + Math.floor(Math.random() * 40)}`;
  const res = http.get(`${API}/articles/${pick(d.slugs)}`, { headers: { 'X-Forwarded-For': ip } });
  checkOK(res, 'background');
  if (d.rateLimited) check(res, { 'background: RateLimit fields': (r) => hasRateLimitHeaders(r) });
}

export function handleSummary(data) {
  const txt = `Invoicewire k6, phase ${PHASE}, ${BASE}\n` + table(data, durations);
  return {
    stdout: txt,
    [`${OUT}/${PHASE}.json`]: JSON.stringify(data, null, 2),
    [`${OUT}/${PHASE}.txt`]: txt,
  };
}
