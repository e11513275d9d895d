// A tiny client of a running Invoicewire instance, typed entirely by the
// types openapi-typescript generates from origin/openapi/openapi.json. If the
// document drifts from what this program uses, `tsc` fails; if the instance
// drifts from the document, the checks below fail.
//
// Usage: IW_BASE_URL=http://127.0.0.1:8080/api/v1 node dist/main.js
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/api.js";

type ServiceIndex = components["schemas"]["ServiceIndex"];
type ArticleList = components["schemas"]["ArticleList"];
type Country = components["schemas"]["Country"];

const baseUrl = process.env.IW_BASE_URL;
if (!baseUrl) {
  console.error("IW_BASE_URL is not set (the {base_url} of a running instance, ending in /api/v1)");
  process.exit(2);
}

const client = createClient<paths>({ baseUrl });
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

await checkIndex();
await checkArticles();
await checkCountry();
if (problems.length > 0) {
  console.error(problems.map((p) => `FAIL ${p}`).join("\n"));
  process.exit(1);
}
console.log(`ok: 3 endpoints of ${baseUrl} answered as the OpenAPI document says`);
