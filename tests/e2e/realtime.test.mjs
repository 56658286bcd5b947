// End to end with the official `openai` npm SDK's Realtime client (`OpenAIRealtimeWS`, over the `ws`
// package) through sluice's WebSocket relay, and the same session straight to `sluice sim`: the
// events agree, a large message passes through whole, and a close from the client reaches the
// upstream. The SDK always builds a wss:// URL; the test's gateway speaks plain TCP, so the socket is
// made with net.connect (the `ws` package's createConnection option).
// Run by ctest (SLUICE_BIN) or: node --test tests/e2e/realtime.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { start as startIn } from './lib.mjs';

const procs = [];
let gatewayURL;
let simURL;
let simStats;

before(async () => {
  const sim = await startIn(procs, ['sim', '--listen', '127.0.0.1:0', '--tokens', '5']);
  const gw = await startIn(procs, ['serve', '--listen', '127.0.0.1:0', '--threads', '1', '--upstream',
    `http://127.0.0.1:${sim.port}`], { OPENAI_API_KEY: '' });
  gatewayURL = `http://127.0.0.1:${gw.port}/v1`;
  simURL = `http://127.0.0.1:${sim.port}/v1`;
  simStats = async () => (await fetch(`http://127.0.0.1:${sim.port}/sim/stats`)).json();
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const plainTCP = { createConnection: (o) => net.connect(o) };

// The next event of `type` on the session (rejects on an error event or after 10 s).
function next(rt, type) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} event`)), 10000);
    rt.once(type, (e) => { clearTimeout(timer); resolve(e); });
    rt.once('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

async function session(baseURL) {
  const client = new OpenAI({ baseURL, apiKey: 'sk-e2e-own-key', maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: plainTCP }, client);
  const created = await next(rt, 'session.created');
  rt.send({ type: 'session.update', session: { instructions: 'be brief' } });
  const updated = await next(rt, 'session.updated');
  let text = '';
  rt.on('response.output_text.delta', (e) => { text += e.delta; });
  rt.send({ type: 'response.create' });
  const done = await next(rt, 'response.done');
  const payload = 'x'.repeat(2 * 1024 * 1024);
  rt.send({ type: 'sim.echo', payload });
  const echoed = await next(rt, 'sim.echo');
  const closed = new Promise((resolve) => rt.socket.once('close', (code) => resolve(code)));
  rt.close();
  // The words differ by session (the simulator seeds them with the session's id); their count does not.
  return { model: created.session.model, instructions: updated.session.instructions, words: text.trim().split(' ').length,
    status: done.response.status, echoed: echoed.payload === payload, closeCode: await closed };
}

test('realtime: a session through sluice is the simulator\'s own, events both ways and closed both ways', async () => {
  const before = (await simStats()).realtime_closed_by_client;
  const through = await session(gatewayURL);
  const direct = await session(simURL);
  assert.equal(through.status, 'completed');
  assert.equal(through.words, 5, 'the simulator\'s five words');
  assert.equal(through.echoed, true, 'a 2 MiB message came through whole');
  assert.deepEqual(through, direct);
  let closes = before;
  for (let i = 0; i < 500 && closes < before + 2; i++) {
    closes = (await simStats()).realtime_closed_by_client;
    if (closes < before + 2) await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(closes, before + 2, 'each client\'s close reached the simulator');
});
