// Drives bench/background.sh: creates JOBS background responses on the gateway (CONCURRENCY
// creates in flight), then polls each until it is final; prints one JSON line with the figures.
// Node's own http module (keep-alive agent); no SDK, so that the client costs little.
// PHASE=create writes the ids to IDS_FILE and stops; PHASE=poll reads them from it and only polls
// (bench/queue.sh measures Redis between the two); unset: both.
import fs from 'node:fs';
import http from 'node:http';

const port = Number(process.env.PORT);
const jobs = Number(process.env.JOBS ?? 10000);
const concurrency = Number(process.env.CONCURRENCY ?? 64);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent,
      headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {} },
    (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: data }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

async function pool(items, n, fn) {
  let next = 0;
  const out = new Array(items.length);
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

const phase = process.env.PHASE ?? '';
const t0 = process.hrtime.bigint();
const ids = phase === 'poll' ? JSON.parse(fs.readFileSync(process.env.IDS_FILE, 'utf8')) : await pool(Array.from({ length: jobs }, (_, i) => i), concurrency, async (i) => {
  const r = await call('POST', '/v1/responses', JSON.stringify({ model: 'sim-1', input: `job ${i}`, background: true }));
  if (r.status !== 200) throw new Error(`create ${i}: ${r.status} ${r.body}`);
  return JSON.parse(r.body).id;
});
const created = process.hrtime.bigint();
if (phase === 'create') {
  fs.writeFileSync(process.env.IDS_FILE, JSON.stringify(ids));
  console.log(JSON.stringify({ jobs, concurrency, create_seconds: Number(created - t0) / 1e9 }));
  agent.destroy();
  process.exit(0);
}
const statuses = {};
const results = await pool(ids, concurrency, async (id) => {
  for (;;) {
    const r = await call('GET', `/v1/responses/${id}`);
    const s = JSON.parse(r.body).status;
    if (s !== 'queued' && s !== 'in_progress') return s;
    await new Promise((res) => setTimeout(res, 50));
  }
});
const done = process.hrtime.bigint();
for (const s of results) statuses[s] = (statuses[s] ?? 0) + 1;
console.log(JSON.stringify({
  jobs, concurrency,
  create_seconds: Number(created - t0) / 1e9,
  total_seconds: Number(done - t0) / 1e9,
  jobs_per_second: jobs / (Number(done - t0) / 1e9),
  statuses,
}));
agent.destroy();
