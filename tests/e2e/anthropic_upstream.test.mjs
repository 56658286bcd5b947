// End to end with the official `openai` npm SDK pointed at sluice, sluice in front of an upstream
// that speaks Anthropic's Messages API (`sluice sim`'s /v1/messages, which wants x-api-key and
// anthropic-version like the real API): the upstream configured `dialect: anthropic`, every chat
// request translated to a Messages request and every answer back (docs/dialects.md). Run by ctest
// (SLUICE_BIN) or: node --test tests/e2e/anthropic_upstream.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { zodResponseFormat, zodFunction, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { readChatStream, serveWithConfig, start as startIn, untilFinal } from './lib.mjs';

const UPSTREAM_KEY = 'sk-ant-e2e-PLANTED-upstream-9b3f';
const procs = [];
let baseURL;
let simURL;
let gatewayOutput;
let mixedURL;      // a gateway with an Anthropic and an OpenAI upstream for the same model
let mixedSims;
const start = (args, env) => startIn(procs, args, env);

before(async () => {
  const sim = await start(['sim', '--listen', '127.0.0.1:0', '--tokens', '12', '--token-delay', '2ms',
    '--require-key', UPSTREAM_KEY]);
  const claude = ['  - name: claude', `    url: http://127.0.0.1:${sim.port}`, '    dialect: anthropic',
    '    key-env: E2E_ANTHROPIC_KEY'];
  // One attempt: a fault the simulator is told to make reaches the client as it is.
  const gw = await serveWithConfig(procs, ['max-attempts: 1', 'upstreams:', ...claude], { E2E_ANTHROPIC_KEY: UPSTREAM_KEY }, 2);
  baseURL = `http://127.0.0.1:${gw.port}/v1`;
  simURL = `http://127.0.0.1:${sim.port}`;
  gatewayOutput = gw.output;

  // Each simulator wants its key in its dialect's header: a request sent with the other's fails.
  const openaiSim = await start(['sim', '--listen', '127.0.0.1:0', '--tokens', '12', '--token-delay', '2ms',
    '--require-key', 'sk-e2e-openai-upstream']);
  const mixedGw = await serveWithConfig(procs, ['max-attempts: 3', 'retry-backoff-base: 1ms', 'upstreams:', ...claude,
    '  - name: gpt', `    url: http://127.0.0.1:${openaiSim.port}`],
  { E2E_ANTHROPIC_KEY: UPSTREAM_KEY, OPENAI_API_KEY: 'sk-e2e-openai-upstream' });
  mixedURL = `http://127.0.0.1:${mixedGw.port}/v1`;
  mixedSims = [simURL, `http://127.0.0.1:${openaiSim.port}`];
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const client = () => new OpenAI({ baseURL, apiKey: 'sk-client-side-dummy', maxRetries: 0, timeout: 20000 });
const ask = { model: 'claude-sim', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }] };
const chunkId = /^chatcmpl-[0-9a-f]{32}$/;

async function simMessagesServed() {
  const text = await (await fetch(`${simURL}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^sim_requests_total\{([^}]*)\} (\S+)$/gm))
    if (m[1].includes('messages')) n += Number(m[2]);
  return n;
}

test('a streamed chat completion from an Anthropic upstream: text, finish reason and usage', async () => {
  const served = await simMessagesServed();
  const stream = await client().chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
  const { text, finish, usage, ids } = await readChatStream(stream);
  assert.equal(ids.size, 1);
  assert.match([...ids][0], chunkId);
  assert.ok(text.length > 0);
  assert.equal(finish, 'stop');
  assert.equal(usage?.completion_tokens, 12);
  assert.ok(usage.prompt_tokens > 0);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  assert.equal(await simMessagesServed(), served + 1, 'the upstream was asked through /v1/messages');
});

test('a stream that did not ask for usage gets no usage chunk', async () => {
  const { text, usage } = await readChatStream(await client().chat.completions.create({ ...ask, stream: true }));
  assert.equal(usage, null);
  assert.ok(text.length > 0);
});

test('a whole chat completion from an Anthropic upstream', async () => {
  const res = await client().chat.completions.create(ask);
  assert.equal(res.object, 'chat.completion');
  assert.match(res.id, chunkId);
  assert.equal(res.choices[0].message.role, 'assistant');
  assert.ok(res.choices[0].message.content.length > 0);
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.equal(res.usage.completion_tokens, 12);
});

test('max_tokens reached is finish_reason length, streamed and whole', async () => {
  const short = { ...ask, max_tokens: 3 };
  const whole = await client().chat.completions.create(short);
  assert.equal(whole.choices[0].finish_reason, 'length');
  const final = await client().chat.completions.stream(short).finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, 'length');
});

test('a tool call: the SDK parses the arguments, streamed and whole', async () => {
  const Weather = z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) });
  const req = {
    ...ask,
    messages: [{ role: 'user', content: 'weather in Oslo?' }],
    tools: [zodFunction({ name: 'get_weather', parameters: Weather })],
    tool_choice: 'required',
  };
  const opts = { headers: { 'x-sim-content': '{"city":"Oslo","unit":"celsius"}' } };
  const whole = await client().chat.completions.parse(req, opts);
  const call = whole.choices[0].message.tool_calls[0];
  assert.equal(whole.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(call.function.parsed_arguments, { city: 'Oslo', unit: 'celsius' });
  const final = await client().chat.completions.stream(req, opts).finalChatCompletion();
  const streamed = final.choices[0].message.tool_calls[0];
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.equal(streamed.function.name, 'get_weather');
  assert.match(streamed.id, /^toolu_/);
  assert.deepEqual(streamed.function.parsed_arguments, { city: 'Oslo', unit: 'celsius' });
});

test('a tool result goes back to the upstream as a tool_result turn', async () => {
  const res = await client().chat.completions.create({
    model: 'claude-sim',
    messages: [
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_01', content: '4 degrees' },
    ],
  });
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.ok(res.choices[0].message.content.length > 0);
});

test('structured outputs are checked on the translated answer (zod, whole and streamed)', async () => {
  const City = z.object({ city: z.string(), n: z.number().int() });
  const req = { ...ask, response_format: zodResponseFormat(City, 'city') };
  const good = { headers: { 'x-sim-content': '{"city":"Oslo","n":3}', 'x-sluice-schema-policy': 'reject' } };
  const whole = await client().chat.completions.parse(req, good);
  assert.deepEqual(whole.choices[0].message.parsed, { city: 'Oslo', n: 3 });
  const final = await client().chat.completions.stream(req, good).finalChatCompletion();
  assert.deepEqual(final.choices[0].message.parsed, { city: 'Oslo', n: 3 });
  const bad = { headers: { 'x-sim-content': '{"city":"Oslo","n":"three"}', 'x-sluice-schema-policy': 'reject' } };
  await assert.rejects(client().chat.completions.parse(req, bad), (err) => err instanceof OpenAI.APIError);
});

test('a chat field the Messages API cannot carry is a BadRequestError naming it', async () => {
  await assert.rejects(
    client().chat.completions.create({ ...ask, n: 2 }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && err.param === 'n',
  );
});

test('the upstream overloaded (529) is a 503 in OpenAI shape; its rate limit a 429', async () => {
  await assert.rejects(
    client().chat.completions.create(ask, { headers: { 'x-sim-status': '529' } }),
    (err) => err instanceof OpenAI.InternalServerError && err.status === 503 && typeof err.message === 'string',
  );
  await assert.rejects(
    client().chat.completions.create(ask, { headers: { 'x-sim-fault': '429' } }),
    (err) => err instanceof OpenAI.RateLimitError && err.status === 429,
  );
});

test('an error event mid-stream surfaces as an APIError, never a silent end', async () => {
  const stream = await client().chat.completions.create(
    { ...ask, stream: true },
    { headers: { 'x-sim-fault': 'malformed', 'x-sim-fault-after': '3' } },
  );
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  }, (err) => err instanceof OpenAI.APIError);
  assert.ok(text.length > 0, 'the tokens before the error arrived');
});

test('a reset mid-stream surfaces as an APIError', async () => {
  const stream = await client().chat.completions.create(
    { ...ask, stream: true },
    { headers: { 'x-sim-fault': 'reset', 'x-sim-fault-after': '3' } },
  );
  await assert.rejects(async () => {
    for await (const _ of stream) { /* drain */ }
  }, (err) => err instanceof OpenAI.APIError);
});

test('embeddings are not sent to an Anthropic upstream: a clear 404', async () => {
  await assert.rejects(
    client().embeddings.create({ model: 'claude-sim', input: 'x' }),
    (err) => err instanceof OpenAI.NotFoundError && /Anthropic Messages API/.test(err.message),
  );
});

// The Responses API in front of the same upstream (docs/dialects.md, "/v1/responses").
const responseId = /^resp_[0-9a-f]{32}$/;

test('responses.create from an Anthropic upstream, whole and streamed', async () => {
  const whole = await client().responses.create({ model: 'claude-sim', instructions: 'Be brief.', input: 'Say hello' });
  assert.match(whole.id, responseId);
  assert.equal(whole.status, 'completed');
  assert.ok(whole.output_text.length > 0);
  assert.equal(whole.usage.output_tokens, 12);
  const events = [];
  const stream = client().responses.stream({ model: 'claude-sim', input: 'Say hello' });
  stream.on('event', (e) => events.push(e.type));
  const final = await stream.finalResponse();
  assert.equal(final.status, 'completed');
  assert.ok(final.output_text.length > 0);
  assert.equal(final.usage.output_tokens, 12);
  assert.equal(events[0], 'response.created');
  assert.equal(events.at(-1), 'response.completed');
  assert.ok(events.filter((t) => t === 'response.output_text.delta').length >= 12, events.join(' '));
});

test('responses: a function call and max_output_tokens', async () => {
  const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
  const opts = { headers: { 'x-sim-content': '{"city":"Oslo"}' } };
  const final = await client().responses.stream({ model: 'claude-sim', input: 'weather?', tools, tool_choice: 'required' }, opts)
    .finalResponse();
  const call = final.output.find((i) => i.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Oslo' });
  const cut = await client().responses.create({ model: 'claude-sim', input: 'Say hello', max_output_tokens: 3 });
  assert.equal(cut.status, 'incomplete');
  assert.equal(cut.incomplete_details.reason, 'max_output_tokens');
});

test('responses: zodTextFormat checked on the translated answer', async () => {
  const City = z.object({ city: z.string(), n: z.number().int() });
  const res = await client().responses.parse(
    { model: 'claude-sim', input: 'a city', text: { format: zodTextFormat(City, 'city') } },
    { headers: { 'x-sim-content': '{"city":"Oslo","n":3}' } },
  );
  assert.deepEqual(res.output_parsed, { city: 'Oslo', n: 3 });
});

test('responses: a background response runs through the Anthropic upstream', async () => {
  const c = client();
  const created = await c.responses.create({ model: 'claude-sim', input: 'Say hello', background: true });
  const done = await untilFinal(c, created.id);
  assert.equal(done.status, 'completed');
  assert.ok(done.output_text.length > 0);
});

test('responses: previous_response_id is refused naming it (an Anthropic upstream keeps no state)', async () => {
  await assert.rejects(
    client().responses.create({ model: 'claude-sim', input: 'more', previous_response_id: 'resp_0123' }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'previous_response_id',
  );
});

// The Messages API in front of the same upstream: count_tokens is the upstream's own tokenizer.
test('messages.countTokens is the Anthropic upstream\'s count; messages.create works through both translations', async () => {
  const anthropic = new Anthropic({ baseURL: baseURL.replace(/\/v1$/, ''), apiKey: 'sk-ant-dummy', maxRetries: 0, timeout: 20000 });
  const short = await anthropic.messages.countTokens({ model: 'claude-sim', messages: [{ role: 'user', content: 'hi' }] });
  const long = await anthropic.messages.countTokens({
    model: 'claude-sim',
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'hi '.repeat(400) }],
  });
  assert.ok(Number.isInteger(short.input_tokens) && short.input_tokens > 0, JSON.stringify(short));
  assert.ok(long.input_tokens > short.input_tokens + 100, `${long.input_tokens} vs ${short.input_tokens}`);
  const msg = await anthropic.messages.create({ model: 'claude-sim', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.usage.output_tokens, 12);
});

test('failover between an Anthropic and an OpenAI upstream: each gets the request in its own dialect', async () => {
  // Each simulator fails the next request it gets (the Anthropic one with 529): the first attempt
  // fails on one, the second on the other, the third is answered, whichever the router picked first.
  for (const url of mixedSims) {
    const ctl = await fetch(`${url}/sim/control`, { method: 'POST', body: JSON.stringify({ script: [{ fault: '5xx' }] }) });
    assert.equal(ctl.status, 200);
  }
  const mixedClient = new OpenAI({ baseURL: mixedURL, apiKey: 'sk-client-side-dummy', maxRetries: 0, timeout: 20000 });
  const { data: stream, response } = await mixedClient.chat.completions
    .create({ ...ask, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  assert.equal(response.headers.get('x-sluice-attempts'), '3');
  const { text, usage } = await readChatStream(stream);
  assert.ok(text.length > 0);
  assert.equal(usage?.completion_tokens, 12);
  for (const url of mixedSims) assert.equal((await (await fetch(`${url}/sim/control`)).json()).script_remaining, 0);
});

test('the upstream key never appears in the gateway output', () => {
  assert.ok(!gatewayOutput().includes(UPSTREAM_KEY));
  assert.ok(!gatewayOutput().includes('PLANTED'));
});
