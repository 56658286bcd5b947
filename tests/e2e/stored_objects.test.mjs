// End to end with the official `openai` npm SDK on the stored-object routes (ADR 0027): batches,
// vector stores (their files and search), fine-tuning jobs and conversations (their items). Each
// family's sequence runs through sluice (the client's own key going upstream) and straight against
// `sluice sim`: the answers agree, ids and times aside. Then the tenant rule: a gateway with client
// keys refuses these routes (their objects would all be in its own account) and still serves audio.
// Run by ctest (SLUICE_BIN) or: node --test tests/e2e/stored_objects.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { start as startIn } from './lib.mjs';

const procs = [];
let gatewayURL;
let simURL;
let keyedURL;

before(async () => {
  const sim = await startIn(procs, ['sim', '--listen', '127.0.0.1:0', '--tokens', '3']);
  const upstream = ['--upstream', `http://127.0.0.1:${sim.port}`];
  const gw = await startIn(procs, ['serve', '--listen', '127.0.0.1:0', '--threads', '1', ...upstream], { OPENAI_API_KEY: '' });
  const keys = path.join(mkdtempSync(path.join(tmpdir(), 'sluice-e2e-objects-')), 'keys');
  writeFileSync(keys, 'sk-e2e-key-0001 10 100000 team\n');
  const keyed = await startIn(procs, ['serve', '--listen', '127.0.0.1:0', '--threads', '1', '--keys-file', keys, ...upstream],
    { OPENAI_API_KEY: 'sk-e2e-gateway-own-key' });
  gatewayURL = `http://127.0.0.1:${gw.port}/v1`;
  simURL = `http://127.0.0.1:${sim.port}/v1`;
  keyedURL = `http://127.0.0.1:${keyed.port}/v1`;
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const client = (baseURL, apiKey = 'sk-e2e-own-key') => new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const both = () => [['through sluice', client(gatewayURL)], ['direct', client(simURL)]];

// The answers with every id and time replaced by a placeholder: two runs store different objects.
const idLike = /^(file-|batch_|vs_|vsfb_|ftjob-|conv_|msg_|item_)[0-9a-f]+$/;
function shape(v, key = '') {
  if (Array.isArray(v)) return v.map((x) => shape(x));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x, k)]));
  if (typeof v === 'string' && idLike.test(v)) return '<id>';
  if (typeof v === 'number' && key.endsWith('_at')) return '<time>';
  return v;
}

// Runs `sequence(client)` through the gateway and directly; each run's answers, and asserts they agree.
async function sameBothWays(sequence) {
  const runs = {};
  for (const [how, c] of both()) runs[how] = await sequence(c, how);
  assert.deepEqual(shape(runs['through sluice']), shape(runs.direct));
  return runs.direct;
}

const upload = async (c, name, text, purpose) => c.files.create({ file: await toFile(Buffer.from(text), name), purpose });
const request = JSON.stringify({ custom_id: 'r1', method: 'POST', url: '/v1/chat/completions', body: { model: 'sim-1', messages: [] } });

test('batches: create from an uploaded file, retrieve, list, cancel', async () => {
  const seen = await sameBothWays(async (c, how) => {
    const file = await upload(c, 'requests.jsonl', `${request}\n`, 'batch');
    const created = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { run: 'e2e' } });
    assert.equal(created.input_file_id, file.id, how);
    const retrieved = await c.batches.retrieve(created.id);
    assert.deepEqual(retrieved, created, how);
    const listed = (await c.batches.list({ limit: 10 })).data.find((b) => b.id === created.id);
    assert.ok(listed, `${how}: the new batch is on the list's first page`);
    const cancelled = await c.batches.cancel(created.id);
    const settled = await c.batches.retrieve(created.id);
    return { created, listed, cancelled, settled };
  });
  assert.equal(seen.created.status, 'validating');
  assert.equal(seen.cancelled.status, 'cancelling');
  assert.equal(seen.settled.status, 'cancelled');
  assert.equal(seen.created.expires_at - seen.created.created_at, 86400);
});

test('vector stores: create, retrieve, update, list, search, add a file, list files, delete', async () => {
  const seen = await sameBothWays(async (c, how) => {
    const file = await upload(c, 'notes.txt', 'The return policy is thirty days.\n', 'assistants');
    const created = await c.vectorStores.create({ name: 'docs', metadata: { run: 'e2e' } });
    const retrieved = await c.vectorStores.retrieve(created.id);
    const updated = await c.vectorStores.update(created.id, { name: 'manuals' });
    const listed = (await c.vectorStores.list({ limit: 10 })).data.find((v) => v.id === created.id);
    const search = await (await c.vectorStores.search(created.id, { query: 'return policy' }).asResponse()).json();
    const added = await c.vectorStores.files.create(created.id, { file_id: file.id });
    assert.equal(added.id, file.id, `${how}: a vector store file's id is its file's`);
    const files = [];
    for await (const f of c.vectorStores.files.list(created.id)) files.push(f);
    const counted = await c.vectorStores.retrieve(created.id);
    const deleted = await c.vectorStores.delete(created.id);
    await assert.rejects(c.vectorStores.retrieve(created.id), OpenAI.NotFoundError);
    return { created, retrieved, updated, listed, search, added, files, counted, deleted };
  });
  assert.equal(seen.created.status, 'completed');
  assert.equal(seen.updated.name, 'manuals');
  assert.deepEqual(seen.listed, seen.updated);
  assert.equal(seen.search.object, 'vector_store.search_results.page');
  assert.equal(seen.search.search_query, 'return policy');
  assert.equal(seen.files.length, 1);
  assert.equal(seen.counted.file_counts.total, 1);
  assert.deepEqual(seen.deleted, { id: seen.created.id, object: 'vector_store.deleted', deleted: true });
});

test('fine-tuning jobs: create from a training file, retrieve, list, events, cancel', async () => {
  const seen = await sameBothWays(async (c, how) => {
    const file = await upload(c, 'train.jsonl', '{"messages":[{"role":"user","content":"hi"}]}\n', 'fine-tune');
    const created = await c.fineTuning.jobs.create({ model: 'gpt-4o-mini', training_file: file.id, metadata: { run: 'e2e' } });
    assert.equal(created.training_file, file.id, how);
    const retrieved = await c.fineTuning.jobs.retrieve(created.id);
    const listed = (await c.fineTuning.jobs.list({ limit: 10 })).data.find((j) => j.id === created.id);
    const events = [];
    for await (const e of c.fineTuning.jobs.listEvents(created.id)) events.push(e);
    const cancelled = await c.fineTuning.jobs.cancel(created.id);
    return { created, retrieved, listed, events, cancelled };
  });
  assert.equal(seen.created.status, 'queued');
  assert.deepEqual(seen.retrieved, seen.created);
  assert.deepEqual(seen.events, []);
  assert.equal(seen.cancelled.status, 'cancelled');
});

test('conversations: create with an item, add items, list them, retrieve, update, delete', async () => {
  const seen = await sameBothWays(async (c) => {
    const created = await c.conversations.create({ metadata: { topic: 'e2e' }, items: [{ type: 'message', role: 'user', content: 'Hello' }] });
    const added = await c.conversations.items.create(created.id, { items: [{ type: 'message', role: 'assistant', content: 'Hi there' }] });
    const items = [];
    for await (const it of c.conversations.items.list(created.id, { order: 'asc' })) items.push(it);
    const retrieved = await c.conversations.retrieve(created.id);
    const updated = await c.conversations.update(created.id, { metadata: { topic: 'changed' } });
    const deleted = await c.conversations.delete(created.id);
    await assert.rejects(c.conversations.retrieve(created.id), OpenAI.NotFoundError);
    return { created, added, items, retrieved, updated, deleted };
  });
  assert.deepEqual(seen.retrieved, seen.created);
  assert.equal(seen.added.data.length, 1);
  assert.deepEqual(seen.items.map((i) => [i.role, i.content[0].type, i.content[0].text]),
    [['user', 'input_text', 'Hello'], ['assistant', 'output_text', 'Hi there']]);
  assert.deepEqual(seen.updated.metadata, { topic: 'changed' });
  assert.equal(seen.deleted.object, 'conversation.deleted');
});

test('with client keys the stored-object routes are refused (404), audio still served', async () => {
  const c = client(keyedURL, 'sk-e2e-key-0001');
  for (const [name, call] of [['files.list', () => c.files.list()], ['batches.list', () => c.batches.list()]]) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `${name}: ${e}`);
      assert.match(e.message, /stored in the upstream's account/, name);
      return true;
    });
  }
  const speech = await c.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Still served.' });
  assert.equal(speech.status, 200);
  assert.ok((await speech.arrayBuffer()).byteLength > 0);
});
