// End to end with a real client: the official `openai` npm SDK pointed at sluice (only baseURL
// changes), sluice in front of `sluice sim`. Run by ctest (SLUICE_BIN) or: node --test tests/e2e/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodTextFormat, zodResponseFormat, zodFunction } from 'openai/helpers/zod';
import { z } from 'zod';
import { start as startIn, sleep, untilFinal } from './lib.mjs';

const UPSTREAM_KEY = 'sk-e2e-PLANTED-upstream-key-51d0';
const procs = [];
let baseURL;
let simURL;
let gatewayOutput = '';
const start = (args, env) => startIn(procs, args, env);

before(async () => {
  const sim = await start(['sim', '--listen', '127.0.0.1:0', '--tokens', '12', '--token-delay', '2ms']);
  const gw = await start(['serve', '--listen', '127.0.0.1:0', '--threads', '2', '--upstream', `http://127.0.0.1:${sim.port}`],
    { OPENAI_API_KEY: UPSTREAM_KEY });
  baseURL = `http://127.0.0.1:${gw.port}/v1`;
  simURL = `http://127.0.0.1:${sim.port}`;
  gatewayOutput = gw.output;
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const client = () => new OpenAI({ baseURL, apiKey: 'sk-client-side-dummy', maxRetries: 0, timeout: 20000 });

test('streaming chat completion through sluice', async () => {
  const stream = await client().chat.completions.create({
    model: 'sim-1',
    messages: [{ role: 'user', content: 'Say hello' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks >= 12, `got ${chunks} chunks`);
  assert.ok(text.length > 0);
  assert.equal(finish, 'stop');
  assert.equal(usage?.completion_tokens, 12);
});

test('non-streaming chat completion through sluice', async () => {
  const res = await client().chat.completions.create({
    model: 'sim-1',
    messages: [{ role: 'user', content: 'Say hello' }],
  });
  assert.equal(res.object, 'chat.completion');
  assert.ok(res.choices[0].message.content.length > 0);
  assert.ok(res.usage.total_tokens > 0);
});

test('models list through sluice', async () => {
  const models = await client().models.list();
  const ids = [];
  for await (const m of models) ids.push(m.id);
  assert.ok(ids.includes('sim-1'));
});

async function promptTokens() {
  const text = await (await fetch(baseURL.replace(/\/v1$/, '/metrics'))).text();
  const m = text.match(/^sluice_tokens_total\{direction="prompt"\} (\S+)$/m);
  return m ? Number(m[1]) : 0;
}

// The SDK asks for base64 by default and decodes it; `float` comes as it is. Both through sluice
// equal the simulator's own answer, and the usage is charged as prompt tokens.
test('embeddings through sluice equal the upstream\'s, base64 and float', async () => {
  const direct = new OpenAI({ baseURL: `${simURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  const req = { model: 'sim-embed', input: ['a river', 'a mountain'], dimensions: 24 };
  const before = await promptTokens();
  const viaGateway = await client().embeddings.create(req);
  const viaFloat = await client().embeddings.create({ ...req, encoding_format: 'float' });
  const own = await direct.embeddings.create(req);
  assert.equal(viaGateway.data.length, 2);
  assert.equal(viaGateway.data[0].embedding.length, 24);
  assert.deepEqual(viaGateway.data.map((d) => d.embedding), own.data.map((d) => d.embedding));
  for (let i = 0; i < 2; i += 1)
    viaFloat.data[i].embedding.forEach((x, k) => assert.ok(Math.abs(x - own.data[i].embedding[k]) < 1e-6));
  assert.equal(viaGateway.usage.prompt_tokens, own.usage.prompt_tokens);
  for (let i = 0; i < 200 && (await promptTokens()) < before + 2 * own.usage.prompt_tokens; i += 1)
    await new Promise((r) => setTimeout(r, 10));
  assert.ok((await promptTokens()) >= before + 2 * own.usage.prompt_tokens, 'both answers\' usage counted');
  await assert.rejects(client().embeddings.create({ model: 'sim-embed', input: [] }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'input');
});

test('moderations through sluice: the upstream\'s verdicts, no model needed', async () => {
  const direct = new OpenAI({ baseURL: `${simURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  const req = { input: ['a calm morning', 'I will hurt you'] };
  const res = await client().moderations.create(req);
  assert.deepEqual(res, await direct.moderations.create(req));
  assert.deepEqual(res.results.map((r) => r.flagged), [false, true]);
  assert.equal(res.results[1].categories.violence, true);
  await assert.rejects(client().moderations.create({ input: [] }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'input');
});

test('models.retrieve through sluice: the upstream\'s model object, its 404 passed on', async () => {
  const direct = new OpenAI({ baseURL: `${simURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  assert.deepEqual(await client().models.retrieve('sim-1'), await direct.models.retrieve('sim-1'));
  await assert.rejects(client().models.retrieve('no-such-model'),
    (err) => err instanceof OpenAI.NotFoundError && err.code === 'model_not_found');
  // An id that is not a model id (a path step, an escape) never reaches an upstream.
  await assert.rejects(client().models.retrieve('../admin'), (err) => err instanceof OpenAI.NotFoundError && err.code === 'not_found');
});

test('a malformed request is a BadRequestError with OpenAI shape', async () => {
  await assert.rejects(
    client().chat.completions.create({ model: 'sim-1', messages: 'not an array' }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && err.param === 'messages',
  );
});

test('an upstream failure mid-stream surfaces as an error, never a silent end', async () => {
  const stream = await client().chat.completions.create(
    { model: 'sim-1', messages: [{ role: 'user', content: 'x' }], stream: true },
    { headers: { 'x-sim-fault': 'reset', 'x-sim-fault-after': '3' } },
  );
  await assert.rejects(async () => {
    for await (const _ of stream) { /* drain */ }
  }, (err) => err instanceof OpenAI.APIError);
});

test('a 429 burst upstream is absorbed: the SDK (its own retries off) just sees the stream', async () => {
  // The next two completion requests the simulator gets are answered 429 with retry-after-ms 100.
  const ctl = await fetch(`${simURL}/sim/control`, {
    method: 'POST',
    body: JSON.stringify({ script: [{ fault: '429', retry_after: '100ms' }, { fault: '429', retry_after: '100ms' }] }),
  });
  assert.equal(ctl.status, 200);
  const { data: stream, response } = await client()
    .chat.completions.create({ model: 'sim-1', messages: [{ role: 'user', content: 'hi' }], stream: true })
    .withResponse();
  assert.equal(response.headers.get('x-sluice-attempts'), '3');
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.ok(text.length > 0);
  const left = await (await fetch(`${simURL}/sim/control`)).json();
  assert.equal(left.script_remaining, 0);
});

test('the upstream key never appears in the gateway output', () => {
  assert.ok(!gatewayOutput().includes(UPSTREAM_KEY));
  assert.ok(!gatewayOutput().includes('PLANTED'));
});

// Structured outputs: sluice validates the model's JSON against response_format's schema
// (docs/schema.md). x-sim-content makes the simulator's output exact.
const citySchema = {
  type: 'object',
  properties: { city: { type: 'string' }, n: { type: 'integer' } },
  required: ['city'],
  additionalProperties: false,
};
const cityFormat = { type: 'json_schema', json_schema: { name: 'city', strict: true, schema: citySchema } };

test('structured output stream through the SDK (annotate, default: no extra event)', async () => {
  const content = '{"city":"Oslo","n":3}';
  const stream = await client().chat.completions.create(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], stream: true, response_format: cityFormat },
    { headers: { 'x-sim-content': content } },
  );
  let text = '';
  for await (const chunk of stream) {
    for (const c of chunk.choices) text += c.delta?.content ?? '';
  }
  assert.equal(text, content);
  assert.deepEqual(JSON.parse(text), { city: 'Oslo', n: 3 });
});

test('structured output: the opt-in sluice.schema event reaches SDK users as a chunk without choices', async () => {
  // Why the event is opt-in (x-sluice-schema-events): openai-node yields a named event's data as
  // an ordinary chunk, so code that reads chunk.choices would throw on it.
  const stream = await client().chat.completions.create(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], stream: true, response_format: cityFormat },
    { headers: { 'x-sim-content': '{"city":"Oslo","n":"three"}', 'x-sluice-schema-events': '1' } },
  );
  const verdicts = [];
  let text = '';
  for await (const chunk of stream) {
    if (!chunk.choices) { verdicts.push(chunk); continue; }
    for (const c of chunk.choices) text += c.delta?.content ?? '';
  }
  assert.equal(text, '{"city":"Oslo","n":"three"}');
  assert.equal(verdicts.length, 1);
  assert.equal(verdicts[0].valid, false);
  assert.equal(verdicts[0].instance_path, '/n');
});

test('structured output under reject: a violation is an APIError in the SDK stream', async () => {
  const stream = await client().chat.completions.create(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], stream: true, response_format: cityFormat },
    { headers: { 'x-sim-content': '{"city":"Oslo","n":"three"}', 'x-sluice-schema-policy': 'reject' } },
  );
  await assert.rejects(async () => {
    for await (const _ of stream) { /* drain */ }
  }, (err) => err instanceof OpenAI.APIError && err.code === 'schema_violation');
});

test('structured output non-stream: verdict header, and a bad schema is a BadRequestError naming it', async () => {
  const { data, response } = await client().chat.completions
    .create(
      { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], response_format: cityFormat },
      { headers: { 'x-sim-content': '{"city":"Oslo"}' } },
    )
    .withResponse();
  assert.equal(response.headers.get('x-sluice-schema'), 'valid');
  assert.deepEqual(JSON.parse(data.choices[0].message.content), { city: 'Oslo' });

  await assert.rejects(
    client().chat.completions.create({
      model: 'sim-1',
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', unevaluatedProperties: false } } },
    }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'response_format.json_schema.schema/unevaluatedProperties',
  );
});

test('responses API stream through the SDK with text.format json_schema', async () => {
  const content = '{"city":"Rome"}';
  const stream = await client().responses.create(
    { model: 'sim-1', input: 'a city', stream: true, text: { format: { type: 'json_schema', name: 'city', strict: true, schema: citySchema } } },
    { headers: { 'x-sim-content': content } },
  );
  let text = '';
  let completed = false;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = true;
  }
  assert.equal(text, content);
  assert.ok(completed);
});

// The SDK's own structured-output helpers with zod, as users write them: the schemas they send are
// draft-07 (`$schema`, `definitions`), parsed by the SDK on the way back. After each, the gateway's
// /metrics shows the tokens of the answer.
const City = z.object({
  city: z.string(),
  population: z.number().int(),
  districts: z.array(z.object({ name: z.string(), area_km2: z.number() })),
  mayor: z.string().nullable(),
  kind: z.enum(['capital', 'town']),
});
const oslo = { city: 'Oslo', population: 709000, districts: [{ name: 'Frogner', area_km2: 8.3 }], mayor: null, kind: 'capital' };
const osloText = JSON.stringify(oslo);

async function completionTokens() {
  const text = await (await fetch(baseURL.replace(/\/v1$/, '/metrics'))).text();
  const m = text.match(/^sluice_tokens_total\{direction="completion"\} (\S+)$/m);
  return m ? Number(m[1]) : 0;
}
// finish() counts a request after its last byte: wait for the counter to move.
async function tokensMovedFrom(before) {
  for (let i = 0; i < 200; i += 1) {
    const now = await completionTokens();
    if (now > before) return now - before;
    await new Promise((r) => setTimeout(r, 10));
  }
  return 0;
}

test('zod: responses.parse with zodTextFormat (whole)', async () => {
  const before = await completionTokens();
  const res = await client().responses.parse(
    { model: 'sim-1', input: 'a city', text: { format: zodTextFormat(City, 'city') } },
    { headers: { 'x-sim-content': osloText } },
  );
  assert.deepEqual(res.output_parsed, oslo);
  assert.ok((await tokensMovedFrom(before)) > 0, 'tokens of a whole Responses answer');
});

test('zod: responses.stream with zodTextFormat', async () => {
  const before = await completionTokens();
  const stream = client().responses.stream(
    { model: 'sim-1', input: 'a city', text: { format: zodTextFormat(City, 'city') } },
    { headers: { 'x-sim-content': osloText } },
  );
  let deltas = '';
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(deltas, osloText);
  assert.deepEqual(final.output_parsed, oslo);
  assert.ok((await tokensMovedFrom(before)) > 0, 'tokens of a Responses stream (response.completed usage)');
});

test('zod: chat.completions.parse with zodResponseFormat', async () => {
  const before = await completionTokens();
  const res = await client().chat.completions.parse(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], response_format: zodResponseFormat(City, 'city') },
    { headers: { 'x-sim-content': osloText, 'x-sluice-schema-policy': 'reject' } },
  );
  assert.deepEqual(res.choices[0].message.parsed, oslo);
  assert.ok((await tokensMovedFrom(before)) > 0, 'tokens of a whole chat answer');
});

test('zod: chat.completions.stream with zodResponseFormat', async () => {
  const before = await completionTokens();
  const stream = client().chat.completions.stream(
    { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], response_format: zodResponseFormat(City, 'city') },
    { headers: { 'x-sim-content': osloText, 'x-sluice-schema-policy': 'reject' } },
  );
  const final = await stream.finalChatCompletion();
  assert.deepEqual(final.choices[0].message.parsed, oslo);
  assert.ok((await tokensMovedFrom(before)) > 0);
});

test('zod: a tool call with zodFunction', async () => {
  const before = await completionTokens();
  const Weather = z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) });
  const res = await client().chat.completions.parse(
    {
      model: 'sim-1',
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [zodFunction({ name: 'get_weather', parameters: Weather })],
      tool_choice: 'required',
    },
    { headers: { 'x-sim-content': '{"city":"Oslo","unit":"celsius"}' } },
  );
  const call = res.choices[0].message.tool_calls[0];
  assert.equal(res.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(call.function.parsed_arguments, { city: 'Oslo', unit: 'celsius' });
  assert.ok((await tokensMovedFrom(before)) > 0);
});

test('zod: a schema violation under reject is not retried by the SDK (x-should-retry: false)', async () => {
  const retrying = new OpenAI({ baseURL, apiKey: 'sk-client-side-dummy', maxRetries: 2, timeout: 20000 });
  const t0 = Date.now();
  await assert.rejects(
    retrying.chat.completions.parse(
      { model: 'sim-1', messages: [{ role: 'user', content: 'a city' }], response_format: zodResponseFormat(City, 'city') },
      { headers: { 'x-sim-content': '{"city":"Oslo"}', 'x-sluice-schema-policy': 'reject' } },
    ),
    (err) => err instanceof OpenAI.APIError && err.status === 502 && err.code === 'schema_violation' &&
      err.headers.get('x-should-retry') === 'false',
  );
  // With its default back-off (0.5 s, then 1 s) two retries would take well over a second.
  assert.ok(Date.now() - t0 < 1000, `took ${Date.now() - t0} ms: the SDK retried`);
});

test('a broken Responses stream raises in the SDK (the Responses error event)', async () => {
  const stream = client().responses.stream(
    { model: 'sim-1', input: 'x' },
    { headers: { 'x-sim-fault': 'malformed', 'x-sim-fault-after': '3' } },
  );
  await assert.rejects(stream.finalResponse(), (err) => err instanceof OpenAI.APIError || err instanceof OpenAI.OpenAIError);
});

// Background responses (docs/queue.md): create, retrieve until done, resume the stored stream
// after a sequence number, cancel a running one.

test('background: responses.create, then responses.retrieve until completed', async () => {
  const c = client();
  const created = await c.responses.create({ model: 'sim-1', input: 'in the background', background: true });
  assert.match(created.id, /^resp_/);
  assert.equal(created.status, 'queued');
  const done = await untilFinal(c, created.id);
  assert.equal(done.status, 'completed');
  assert.equal(done.id, created.id);
  assert.ok(done.output_text.length > 0, JSON.stringify(done));
});

test('background: responses.retrieve(id, {stream, starting_after}) gives exactly the events after N', async () => {
  const c = client();
  const created = await c.responses.create({ model: 'sim-1', input: 'resume me', background: true });
  await untilFinal(c, created.id);
  const all = [];
  for await (const ev of await c.responses.retrieve(created.id, { stream: true })) all.push(ev);
  assert.equal(all.at(-1).type, 'response.completed');
  const n = 4;
  const rest = [];
  for await (const ev of await c.responses.retrieve(created.id, { stream: true, starting_after: n })) rest.push(ev);
  assert.deepEqual(rest.map((e) => e.sequence_number), all.slice(n + 1).map((e) => e.sequence_number));
  assert.equal(rest[0].sequence_number, n + 1);
  assert.equal(rest.at(-1).type, 'response.completed');
});

test('background: responses.cancel stops a running response', async () => {
  const c = client();
  const created = await c.responses.create({ model: 'sim-1', input: 'a long one', background: true },
    { headers: { 'x-sim-tokens': '2000', 'x-sim-token-delay': '20ms' } });
  for (let i = 0; i < 200 && (await c.responses.retrieve(created.id)).status !== 'in_progress'; i++) await sleep(10);
  const cancelled = await c.responses.cancel(created.id);
  assert.equal(cancelled.status, 'cancelled');
  const after = await untilFinal(c, created.id);
  assert.equal(after.status, 'cancelled');
  await assert.rejects(c.responses.retrieve('resp_unknown0000'), (err) => err instanceof OpenAI.NotFoundError);
});
