// End to end with Anthropic's official SDK (`@anthropic-ai/sdk`) pointed at sluice's Messages API
// (only baseURL changes), sluice in front of `sluice sim`, an OpenAI-compatible upstream: the
// dialect translates the request, the stream and the whole answer (docs/dialects.md). Run by ctest
// (SLUICE_BIN) or: node --test tests/e2e/anthropic_sdk.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { start as startIn } from './lib.mjs';

const UPSTREAM_KEY = 'sk-e2e-PLANTED-anthropic-upstream-7c1e';
const CLIENT_KEY = 'sk-ant-e2e-client-key-4d2a9b';
const procs = [];
let baseURL;       // a gateway without client keys
let keyedURL;      // a gateway with a keys file: x-api-key is the credential
let outputs = [];
const start = (args, env) => startIn(procs, args, env);

before(async () => {
  const sim = await start(['sim', '--listen', '127.0.0.1:0', '--tokens', '12', '--token-delay', '2ms']);
  const upstream = ['--upstream', `http://127.0.0.1:${sim.port}`];
  const gw = await start(['serve', '--listen', '127.0.0.1:0', '--threads', '2', ...upstream], { OPENAI_API_KEY: UPSTREAM_KEY });
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-e2e-anthropic-'));
  const keys = path.join(dir, 'keys');
  writeFileSync(keys, `${CLIENT_KEY} 4 0 claude-team\n`);
  const keyed = await start(['serve', '--listen', '127.0.0.1:0', '--threads', '1', '--keys-file', keys, ...upstream],
    { OPENAI_API_KEY: UPSTREAM_KEY });
  baseURL = `http://127.0.0.1:${gw.port}`;
  keyedURL = `http://127.0.0.1:${keyed.port}`;
  outputs = [gw.output, keyed.output];
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const client = (url = baseURL, apiKey = 'sk-ant-dummy') => new Anthropic({ baseURL: url, apiKey, maxRetries: 0, timeout: 20000 });
const ask = { model: 'sim-1', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello' }] };
const messageId = /^msg_[0-9a-f]{32}$/;

test('a streamed message through sluice: the SDK assembles text, stop reason and usage', async () => {
  const events = [];
  const stream = client().messages.stream(ask);
  stream.on('streamEvent', (e) => events.push(e.type));
  const msg = await stream.finalMessage();
  assert.match(msg.id, messageId);
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].type, 'text');
  assert.ok(msg.content[0].text.length > 0);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.usage.output_tokens, 12);
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  assert.ok(events.filter((t) => t === 'content_block_delta').length >= 12, events.join(' '));
});

test('a whole message through sluice', async () => {
  const msg = await client().messages.create(ask);
  assert.equal(msg.type, 'message');
  assert.match(msg.id, messageId);
  assert.equal(msg.content[0].type, 'text');
  assert.ok(msg.content[0].text.length > 0);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.usage.output_tokens, 12);
  assert.ok(msg.usage.input_tokens > 0);
});

test('max_tokens reached is stop_reason max_tokens, streamed and whole', async () => {
  const short = { ...ask, max_tokens: 3 };
  const streamed = await client().messages.stream(short).finalMessage();
  assert.equal(streamed.stop_reason, 'max_tokens');
  const whole = await client().messages.create(short);
  assert.equal(whole.stop_reason, 'max_tokens');
});

test('a tool call is a tool_use block whose input the SDK parses, streamed and whole', async () => {
  const req = {
    ...ask,
    tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
  };
  const opts = { headers: { 'x-sim-tool-call': 'get_weather', 'x-sim-content': '{"city": "Paris"}' } };
  const streamed = await client().messages.stream(req, opts).finalMessage();
  const whole = await client().messages.create(req, opts);
  for (const msg of [streamed, whole]) {
    assert.equal(msg.stop_reason, 'tool_use');
    const use = msg.content.find((b) => b.type === 'tool_use');
    assert.ok(use, JSON.stringify(msg.content));
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { city: 'Paris' });
  }
});

// output_config.format is checked by the gateway's structured outputs as a chat response_format is.
test('a schema asked for through output_config is validated as through the OpenAI API', async () => {
  const req = {
    ...ask,
    output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  };
  const good = { headers: { 'x-sim-content': '{"city": "Paris"}', 'x-sluice-schema-policy': 'reject' } };
  const whole = await client().messages.create(req, good);
  assert.deepEqual(JSON.parse(whole.content[0].text), { city: 'Paris' });
  const streamed = await client().messages.stream(req, good).finalMessage();
  assert.deepEqual(JSON.parse(streamed.content[0].text), { city: 'Paris' });

  const bad = { headers: { 'x-sim-content': '{"town": "Paris"}', 'x-sluice-schema-policy': 'reject' } };
  await assert.rejects(client().messages.create(req, bad), (err) => {
    assert.ok(err instanceof Anthropic.InternalServerError, String(err));
    assert.equal(err.status, 502);
    assert.equal(err.error?.error?.type, 'api_error');
    assert.match(err.error?.error?.message, /city/);
    return true;
  });
  await assert.rejects(client().messages.stream(req, bad).finalMessage(), (err) => {
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.match(err.error?.error?.message, /city/);
    return true;
  });
});

test('a bad request is the SDK\'s BadRequestError with an Anthropic-shaped body naming the field', async () => {
  await assert.rejects(client().messages.create({ ...ask, max_tokens: 0 }), (err) => {
    assert.ok(err instanceof Anthropic.BadRequestError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.error?.type, 'error');
    assert.equal(err.error?.error?.type, 'invalid_request_error');
    assert.match(err.error?.error?.message, /max_tokens/);
    return true;
  });
});

test('count_tokens is a clear not_found_error, not a silent guess', async () => {
  await assert.rejects(client().messages.countTokens({ model: 'sim-1', messages: ask.messages }), (err) => {
    assert.ok(err instanceof Anthropic.NotFoundError, String(err));
    assert.equal(err.error?.error?.type, 'not_found_error');
    return true;
  });
});

test('with client keys, x-api-key is the credential: a wrong one is an authentication_error', async () => {
  const msg = await client(keyedURL, CLIENT_KEY).messages.create(ask);
  assert.equal(msg.stop_reason, 'end_turn');
  await assert.rejects(client(keyedURL, 'sk-ant-wrong').messages.create(ask), (err) => {
    assert.ok(err instanceof Anthropic.AuthenticationError, String(err));
    assert.equal(err.error?.error?.type, 'authentication_error');
    return true;
  });
});

test('an upstream reset mid-stream is an error event the SDK raises, never a silent end', async () => {
  const stream = client().messages.stream(ask, { headers: { 'x-sim-fault': 'reset', 'x-sim-fault-after': '3' } });
  // An `event: error` is raised as an APIError; a stream that just stopped would be another error.
  await assert.rejects(stream.finalMessage(), (err) => {
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal(err.error?.error?.type, 'api_error');
    return true;
  });
});

test('no key of the gateway\'s or the client\'s appears in the gateway output', () => {
  for (const out of outputs) {
    assert.ok(!out().includes(UPSTREAM_KEY));
    assert.ok(!out().includes(CLIENT_KEY));
  }
});
