// End to end with the official `openai` npm SDK through sluice's streamed routes (ADR 0027): a real
// multipart file upload and its content back, a streamed speech download, transcriptions (whole and
// streamed) and translations, an image edit, and the Uploads API. Each call is also made straight
// to `sluice sim` with the same SDK: the answers agree (ids and times aside).
// Run by ctest (SLUICE_BIN) or: node --test tests/e2e/streamed_bodies.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { start as startIn } from './lib.mjs';

const procs = [];
let gatewayURL;
let simURL;

before(async () => {
  const sim = await startIn(procs, ['sim', '--listen', '127.0.0.1:0', '--tokens', '3']);
  const gw = await startIn(procs, ['serve', '--listen', '127.0.0.1:0', '--threads', '1', '--upstream',
    `http://127.0.0.1:${sim.port}`], { OPENAI_API_KEY: '' });
  gatewayURL = `http://127.0.0.1:${gw.port}/v1`;
  simURL = `http://127.0.0.1:${sim.port}/v1`;
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const through = () => new OpenAI({ baseURL: gatewayURL, apiKey: 'sk-e2e-own-key', maxRetries: 0, timeout: 30000 });
const direct = () => new OpenAI({ baseURL: simURL, apiKey: 'sk-e2e-own-key', maxRetries: 0, timeout: 30000 });
const both = [['through sluice', through], ['direct', direct]];

// Bytes of every value (a multipart body must carry CR, LF and '-' untouched).
function bytes(n, seed = 7) {
  const out = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 16;
  }
  return out;
}
const sha = (b) => createHash('sha256').update(b).digest('hex');

test('files: a multipart upload, its object, its content back byte for byte, list and delete', async () => {
  const content = bytes(2 * 1024 * 1024 + 5);
  const seen = {};
  for (const [how, client] of both) {
    const c = client();
    const file = await c.files.create({ file: await toFile(content, 'train.jsonl'), purpose: 'batch' });
    assert.equal(file.bytes, content.length, how);
    assert.equal(file.filename, 'train.jsonl');
    const got = await c.files.retrieve(file.id);
    assert.equal(got.id, file.id);
    const back = Buffer.from(await (await c.files.content(file.id)).arrayBuffer());
    assert.equal(sha(back), sha(content), `${how}: the content came back unchanged`);
    const ids = [];
    for await (const f of c.files.list({ purpose: 'batch' })) ids.push(f.id);
    assert.ok(ids.includes(file.id), how);
    const gone = await c.files.delete(file.id);
    assert.equal(gone.deleted, true);
    seen[how] = { bytes: file.bytes, purpose: file.purpose, status: file.status };
  }
  assert.deepEqual(seen['through sluice'], seen.direct);
});

test('audio.speech: a streamed download, the simulator\'s own bytes', async () => {
  const ask = { model: 'tts-1', voice: 'alloy', input: 'The quick brown fox.' };
  const opts = { headers: { 'x-sim-speech-bytes': String(3 * 1024 * 1024 + 1) } };
  const hashes = [];
  for (const [how, client] of both) {
    const res = await client().audio.speech.create(ask, opts);
    assert.equal(res.headers.get('content-type'), 'audio/mpeg', how);
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(body.length, 3 * 1024 * 1024 + 1, how);
    hashes.push(sha(body));
  }
  assert.equal(hashes[0], hashes[1]);
});

test('audio.transcriptions (whole and streamed) and translations of an uploaded file', async () => {
  const audio = bytes(300 * 1024, 11);
  const texts = [];
  for (const [how, client] of both) {
    const c = client();
    const whole = await c.audio.transcriptions.create({ file: await toFile(audio, 'talk.wav'), model: 'gpt-4o-transcribe' });
    assert.ok(whole.text.length > 0, how);
    assert.ok(whole.usage?.input_tokens > 0, how);
    const stream = await c.audio.transcriptions.create({ file: await toFile(audio, 'talk.wav'), model: 'gpt-4o-transcribe', stream: true });
    let deltas = '';
    let done = null;
    for await (const e of stream) {
      if (e.type === 'transcript.text.delta') deltas += e.delta;
      if (e.type === 'transcript.text.done') done = e;
    }
    assert.ok(done, `${how}: the stream ended with its done event`);
    assert.equal(done.text, whole.text);
    assert.equal(deltas.trim(), whole.text.trim());
    const translated = await c.audio.translations.create({ file: await toFile(audio, 'talk.wav'), model: 'whisper-1' });
    assert.ok(translated.text.length > 0);
    texts.push([whole.text, translated.text]);
  }
  assert.deepEqual(texts[0], texts[1]);
});

test('images.edit: an image uploaded as multipart, the edit answered', async () => {
  const image = bytes(64 * 1024, 3);
  const answers = [];
  for (const [, client] of both) {
    const r = await client().images.edit({ image: await toFile(image, 'in.png', { type: 'image/png' }), prompt: 'a hat', n: 2 });
    assert.equal(r.data.length, 2);
    answers.push(r.data.map((d) => d.b64_json));
  }
  assert.deepEqual(answers[0], answers[1]);
});

test('uploads: create, two parts streamed, complete into a file', async () => {
  const results = [];
  for (const [how, client] of both) {
    const c = client();
    const a = bytes(256 * 1024, 5);
    const b = bytes(100 * 1024, 9);
    const up = await c.uploads.create({ bytes: a.length + b.length, filename: 'big.jsonl', mime_type: 'text/jsonl', purpose: 'batch' });
    const p1 = await c.uploads.parts.create(up.id, { data: await toFile(a, 'part1') });
    const p2 = await c.uploads.parts.create(up.id, { data: await toFile(b, 'part2') });
    const done = await c.uploads.complete(up.id, { part_ids: [p1.id, p2.id] });
    assert.equal(done.status, 'completed', how);
    assert.equal(done.file.bytes, a.length + b.length, how);
    results.push([done.status, done.file.bytes, done.file.filename]);
  }
  assert.deepEqual(results[0], results[1]);
});
