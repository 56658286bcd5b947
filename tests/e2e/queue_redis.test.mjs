// End to end through the Redis queue (--queue redis, docs/queue.md): the official `openai` npm SDK
// against two fronts and one worker, separate `sluice serve` processes sharing a real redis-server
// (a free loopback port), in front of `sluice sim`. A response created on one front is retrieved,
// resumed and cancelled on the other; chat requests to a front (foreground jobs) are run by the
// worker and reach the SDK as ordinary answers, structured outputs included. Run by ctest (SLUICE_BIN) or: node --test tests/e2e/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { start as startIn, sleep, untilFinal } from './lib.mjs';

const procs = [];
const start = (args, env) => startIn(procs, args, env);
let frontA;
let frontB;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}


function startRedis(port) {
  return new Promise((resolve, reject) => {
    const p = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' });
    procs.push(p);
    p.on('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
    const deadline = Date.now() + 10000;
    const probe = () => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(p); });
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error('redis-server did not start'));
        else setTimeout(probe, 20);
      });
    };
    probe();
  });
}

before(async () => {
  const redisPort = await freePort();
  await startRedis(redisPort);
  const sim = await start(['sim', '--listen', '127.0.0.1:0', '--tokens', '12', '--token-delay', '2ms']);
  const common = ['--listen', '127.0.0.1:0', '--threads', '2', '--upstream', `http://127.0.0.1:${sim.port}`,
    '--redis', `redis://127.0.0.1:${redisPort}`, '--redis-command-timeout', '1s', '--queue', 'redis'];
  const env = { OPENAI_API_KEY: 'sk-e2e-queue-upstream' };
  frontA = await start(['serve', ...common, '--role', 'front'], env);
  frontB = await start(['serve', ...common, '--role', 'front'], env);
  await start(['serve', ...common, '--role', 'worker'], env);
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const client = (front) => new OpenAI({ baseURL: `http://127.0.0.1:${front.port}/v1`, apiKey: 'sk-client-side-dummy',
  maxRetries: 0, timeout: 20000 });

test('queue: responses.create on one front, responses.retrieve on another until completed', async () => {
  const created = await client(frontA).responses.create({ model: 'sim-1', input: 'through redis', background: true });
  assert.match(created.id, /^resp_/);
  assert.equal(created.status, 'queued');
  const done = await untilFinal(client(frontB), created.id);
  assert.equal(done.status, 'completed');
  assert.equal(done.id, created.id);
  assert.ok(done.output_text.length > 0, JSON.stringify(done));
});

test('queue: a background stream followed on one front resumes on another after N', async () => {
  const all = [];
  const stream = await client(frontA).responses.create({ model: 'sim-1', input: 'resume me elsewhere', background: true,
    stream: true });
  for await (const ev of stream) all.push(ev);
  assert.equal(all[0].type, 'response.created');
  assert.equal(all.at(-1).type, 'response.completed');
  const id = all[0].response.id;
  const n = 5;
  const rest = [];
  for await (const ev of await client(frontB).responses.retrieve(id, { stream: true, starting_after: n })) rest.push(ev);
  assert.deepEqual(rest.map((e) => e.sequence_number), all.slice(n + 1).map((e) => e.sequence_number));
  assert.equal(rest.at(-1).type, 'response.completed');
});

test('queue: responses.cancel on another front stops a running response', async () => {
  const created = await client(frontA).responses.create({ model: 'sim-1', input: 'a long one', background: true },
    { headers: { 'x-sim-tokens': '2000', 'x-sim-token-delay': '20ms' } });
  const b = client(frontB);
  for (let i = 0; i < 400 && (await b.responses.retrieve(created.id)).status !== 'in_progress'; i++) await sleep(10);
  const cancelled = await b.responses.cancel(created.id);
  assert.equal(cancelled.status, 'cancelled');
  const final = await untilFinal(client(frontA), created.id);
  assert.equal(final.status, 'cancelled');
  await assert.rejects(b.responses.retrieve('resp_00000000000000000000000000000000'), (err) => err instanceof OpenAI.NotFoundError);
});

test('queue: foreground chat through a front, streamed and parsed with zod, as the SDK expects', async () => {
  const City = z.object({ city: z.string(), n: z.number().int() });
  const content = '{"city":"Oslo","n":3}';
  const parsed = await client(frontA).chat.completions.parse(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], response_format: zodResponseFormat(City, 'city') },
    { headers: { 'x-sim-content': content } },
  );
  assert.deepEqual(parsed.choices[0].message.parsed, { city: 'Oslo', n: 3 });
  let text = '';
  const stream = await client(frontB).chat.completions.create(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], stream: true,
      response_format: zodResponseFormat(City, 'city') },
    { headers: { 'x-sim-content': content } },
  );
  for await (const chunk of stream) for (const c of chunk.choices) text += c.delta?.content ?? '';
  assert.equal(text, content);
  // The worker's verdict on a violation reaches the SDK through the front, in-band.
  const bad = await client(frontA).chat.completions.create(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], stream: true,
      response_format: zodResponseFormat(City, 'city') },
    { headers: { 'x-sim-content': '{"city":"Oslo","n":"three"}', 'x-sluice-schema-policy': 'reject' } },
  );
  await assert.rejects(async () => {
    for await (const _ of bad) { /* drain */ }
  }, (err) => err instanceof OpenAI.APIError && err.code === 'schema_violation');
});
