// A tiny client of a running Invoicewire instance, typed entirely by the
// types openapi-typescript generates from origin/openapi/openapi.json. If the
// document drifts from what this program uses, `tsc` fails; if the instance
// drifts from the document, the checks below fail.
//
// The generator runs with its defaults, as most users run it, and the POSTs
// below send the smallest bodies the contract allows: a request schema whose
// generated type asks for more (openapi-typescript makes a property with a
// `default` required, for instance) fails `tsc` here.
//
// Usage: IW_BASE_URL=http://127.0.0.1:8080/api/v1 node dist/main.js
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/api.js";

type ServiceIndex = components["schemas"]["ServiceIndex"];
type ArticleList = components["schemas"]["ArticleList"];
type Country = components["schemas"]["Country"];
type AskResponse = components["schemas"]["AskResponse"];

const baseUrl = process.env.IW_BASE_URL;
if (!baseUrl) {
  console.error("IW_BASE_URL is not set (the {base_url} of a running instance, ending in /api/v1)");
  process.exit(2);
}

const client = createClient<paths>({ baseUrl });
// The operations at {site_root} (/ask among them) need a client of their own:
// openapi-fetch reads only the top-level servers (info.description).
const siteRoot = baseUrl.replace(/\/$/, "").replace(/\/api\/v1$/, "");
const site = createClient<paths>({ baseUrl: siteRoot });
const problems: string[] = [];
function expect(ok: boolean, what: string): void {
  if (!ok) problems.push(what);
}

async function checkIndex(): Promise<void> {
  const { data, error, response } = await client.GET("/");
  expect(response.status === 200, `GET / answered ${response.status}: ${JSON.stringify(error)}`);
  if (!data) return;
  const index: ServiceIndex = data;
  expect(index.name === "Invoicewire", `index name is ${index.name}`);
  expect(index.version === "1.0.0", `index version is ${index.version}`);
  expect(index.base_url === baseUrl!.replace(/\/$/, ""), `base_url ${index.base_url} is not ${baseUrl}`);
  for (const want of ["articles", "countries", "specs", "sources", "feeds", "webhooks"]) {
    expect(index.resources.some((r) => r.name === want && r.href.startsWith("http")), `index lacks resource ${want}`);
  }
}

async function checkArticles(): Promise<void> {
  const { data, error, response } = await client.GET("/articles", { params: { query: { limit: 2 } } });
  expect(response.status === 200, `GET /articles?limit=2 answered ${response.status}: ${JSON.stringify(error)}`);
  expect(response.headers.get("etag") !== null, "GET /articles has no ETag");
  if (!data) return;
  const list: ArticleList = data;
  expect(list.items.length <= 2, `limit=2 returned ${list.items.length} items`);
  expect(list.count >= list.items.length, `count ${list.count} < ${list.items.length} items`);
  expect((list.count > 2) === (list.next !== null), `count ${list.count} but next is ${list.next}`);
  for (const a of list.items) {
    expect(a.url.endsWith(`/${a.slug}/`), `article ${a.slug} has url ${a.url}`);
    expect(a.sources.length > 0, `article ${a.slug} has no sources`);
  }
  const [first, second] = list.items;
  if (first && second) {
    expect(first.published_at >= second.published_at, "articles are not newest first");
  }
}

async function checkCountry(): Promise<void> {
  const { data, error, response } = await client.GET("/countries/{code}", { params: { path: { code: "de" } } });
  expect(response.status === 200, `GET /countries/de answered ${response.status}: ${JSON.stringify(error)}`);
  if (!data) return;
  const country: Country = data;
  expect(country.code === "de", `country code is ${country.code}`);
  expect(country.name.length > 0, "country has no name");
  expect(country.url?.endsWith("/countries/de/") ?? false, `country url is ${country.url}`);
  const missing = await client.GET("/countries/{code}", { params: { path: { code: "zz" } } });
  expect(missing.response.status === 404, `GET /countries/zz answered ${missing.response.status}`);
  expect(missing.error?.error.code === "not_found", `GET /countries/zz error is ${JSON.stringify(missing.error)}`);
}

async function checkAsk(): Promise<void> {
  // Only the required query: locale and prefer are optional.
  const { data, error, response } = await site.POST("/ask", { body: { query: "Peppol in Germany" } });
  expect(response.status === 200, `POST /ask answered ${response.status}: ${JSON.stringify(error)}`);
  expect(
    response.headers.get("content-type")?.startsWith("application/json") ?? false,
    `POST /ask without streaming answered ${response.headers.get("content-type")}`,
  );
  if (!data || typeof data === "string") return;
  const answer: AskResponse = data;
  expect(answer.query === "Peppol in Germany", `POST /ask echoed query ${JSON.stringify(answer.query)}`);
  expect(answer.results.length > 0, "POST /ask found nothing about Peppol in Germany");
}

async function checkSubscribe(): Promise<void> {
  // Only the required url and events (test and secret are optional), sent
  // without a token: the service asks for one before it reads the body.
  const { error, response } = await client.POST("/webhooks", {
    body: { url: "https://hooks.example.com/invoicewire", events: ["spec.updated"] },
    params: { header: { "Idempotency-Key": "clientcheck-subscribe" } },
  });
  expect(response.status === 401, `POST /webhooks without a token answered ${response.status}`);
  expect(error?.error.code === "unauthorized", `POST /webhooks error is ${JSON.stringify(error)}`);
  const challenge = response.headers.get("www-authenticate") ?? "";
  expect(challenge.startsWith("Bearer "), `POST /webhooks challenge is ${JSON.stringify(challenge)}`);
}

await checkIndex();
await checkArticles();
await checkCountry();
await checkAsk();
await checkSubscribe();
if (problems.length > 0) {
  console.error(problems.map((p) => `FAIL ${p}`).join("\n"));
  process.exit(1);
}
console.log(`ok: 5 endpoints of ${baseUrl} and ${siteRoot} answered as the OpenAPI document says`);
