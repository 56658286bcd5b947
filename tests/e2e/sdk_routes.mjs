// The routes the official `openai` npm SDK calls, read from its sources (not a test file itself):
// every `this._client.<method>('/path'` or `this._client.<method>(path`/x/${id}`` in its resources,
// `getAPIList` as GET, each `${...}` a path parameter written `{id}`, under /v1. The Admin API
// (/organization/...) and `?beta=true` variants are left out (docs/api-routes.md).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export function sdkRoutes(sdkRoot) {
  const files = [];
  const walk = (d) => {
    for (const f of readdirSync(d)) {
      const p = path.join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.mjs')) files.push(p);
    }
  };
  walk(path.join(sdkRoot, 'resources'));
  const routes = new Set();
  const call = /this\._client\.(get|post|put|patch|delete|getAPIList)\(\s*(?:path\s*`([^`]*)`|'([^']*)')/g;
  for (const f of files) {
    for (const m of readFileSync(f, 'utf8').matchAll(call)) {
      const method = m[1] === 'getAPIList' ? 'GET' : m[1].toUpperCase();
      const p = (m[2] ?? m[3]).replace(/\$\{[^}]*\}/g, '{id}');
      if (p.startsWith('/organization') || p.includes('?')) continue;
      routes.add(`${method} /v1${p}`);
    }
  }
  return routes;
}
