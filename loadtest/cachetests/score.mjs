// score.mjs classifies http-cache-tests results the way the suite's own
// pages do (lib/display.mjs determineTestResult, dependencies honoured) and
// prints one table row per result file.
//
//   node score.mjs <http-cache-tests dir> <name>=<results.json>...
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'

const [dir, ...files] = process.argv.slice(2)
const load = (p) => import(pathToFileURL(join(dir, p)).href)
const { default: tests } = await load('tests/index.mjs')
const { default: surrogate } = await load('tests/surrogate-control.mjs')
const display = await load('lib/display.mjs')
// cli.mjs runs the surrogate suite too; score what was run.
tests.push(surrogate)

const kinds = ['required', 'optimal', 'check']
const rows = []
for (const arg of files) {
  const [name, file] = arg.split('=')
  const results = JSON.parse(readFileSync(file, 'utf8'))
  const count = {}
  for (const k of kinds) count[k] = { total: 0, pass: 0, fail: 0, dep: 0, setup: 0 }
  for (const suite of tests) {
    for (const test of suite.tests) {
      if (test.browser_only) continue
      const kind = test.kind || 'required'
      const c = count[kind]
      c.total++
      const r = display.determineTestResult(tests, test.id, results)
      const sym = r[2]
      if (sym === '✅' || sym === 'Y') c.pass++
      else if (sym === '⛔️' || sym === '⚠️' || sym === 'N') c.fail++
      else if (sym === '⚪️') c.dep++
      else c.setup++
    }
  }
  rows.push({ name, count })
}
const pad = (s, n) => String(s).padEnd(n)
console.log(pad('cache', 22) + kinds.map(k => pad(`${k} pass/fail/dep/setup (of n)`, 40)).join(''))
for (const { name, count } of rows) {
  console.log(pad(name, 22) + kinds.map(k => {
    const c = count[k]
    return pad(`${c.pass}/${c.fail}/${c.dep}/${c.setup} (of ${c.total})`, 40)
  }).join(''))
}
