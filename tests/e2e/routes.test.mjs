// The route table of docs/api-routes.md against the official `openai` npm SDK's own route list
// (sdk_routes.mjs reads it from the SDK's sources) and against a running gateway: every route the
// SDK calls has a row, every row is a route the SDK calls, and a gateway in front of `sluice sim`
// answers each route as its row says (served: it reaches the pipeline; otherwise the gateway's own
// 404 Unknown request URL, or 405 for a path it serves with another method).
// Run by ctest (SLUICE_BIN) or: node --test tests/e2e/routes.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { start as startIn } from './lib.mjs';
import { sdkRoutes } from './sdk_routes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const procs = [];
let gateway;

before(async () => {
  const sim = await startIn(procs, ['sim', '--listen', '127.0.0.1:0', '--tokens', '2']);
  const gw = await startIn(procs, ['serve', '--listen', '127.0.0.1:0', '--threads', '1', '--upstream',
    `http://127.0.0.1:${sim.port}`]);
  gateway = `http://127.0.0.1:${gw.port}`;
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

// The doc's rows: "METHOD PATH" -> its status column.
function documented() {
  const rows = new Map();
  const doc = readFileSync(path.join(here, '..', '..', 'docs', 'api-routes.md'), 'utf8');
  for (const m of doc.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \| ([^|]+) \|$/gm)) rows.set(`${m[1]} ${m[2]}`, m[3].trim());
  return rows;
}

// A path with its parameters filled in: ids the gateway's own checks accept (a model the
// simulator serves, a response id of the upstream's shape), so a served route reaches the pipeline.
function concrete(route) {
  const p = route.split(' ')[1];
  if (p.startsWith('/v1/models/')) return p.replace('{id}', 'sim-1');
  // An upstream's own response id (longer than the gateway's resp_ + 32 hex): every row goes upstream.
  if (p.startsWith('/v1/responses/')) return p.replaceAll('{id}', 'resp_0123456789abcdef0123456789abcdef0123456789abcdef');
  return p.replaceAll('{id}', 'obj_1');
}

async function gatewayRefuses(route) {
  const method = route.split(' ')[0];
  const init = { method, headers: { 'content-type': 'application/json' } };
  if (method === 'POST') init.body = '{}';
  const res = await fetch(gateway + concrete(route), init);
  const body = await res.text();
  let error = {};
  try { error = JSON.parse(body).error ?? {}; } catch { /* not JSON: not the gateway's refusal */ }
  return (res.status === 404 && String(error.message).startsWith('Unknown request URL')) ||
    (res.status === 405 && error.code === 'method_not_allowed');
}

test('every route the openai SDK calls has a row in docs/api-routes.md, and no row is another', () => {
  const sdk = sdkRoutes(path.join(here, 'node_modules', 'openai'));
  const rows = documented();
  assert.ok(sdk.size > 100, `the SDK's routes were read (${sdk.size})`);
  const missing = [...sdk].filter((r) => !rows.has(r));
  const extra = [...rows.keys()].filter((r) => !sdk.has(r));
  assert.deepEqual(missing, [], 'routes the SDK calls that the table lacks');
  assert.deepEqual(extra, [], 'rows for routes the SDK does not call');
});

test('a gateway serves exactly the routes the table says it serves', async () => {
  const rows = documented();
  const wrong = [];
  for (const [route, status] of rows) {
    const refused = await gatewayRefuses(route);
    if (refused === (status === 'served')) wrong.push(`${route}: table says ${status}, the gateway ${refused ? 'refuses' : 'serves'} it`);
  }
  assert.ok([...rows.values()].filter((s) => s === 'served').length >= 9);
  assert.deepEqual(wrong, []);
});
