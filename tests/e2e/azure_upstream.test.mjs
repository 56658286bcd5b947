// End to end with the official `openai` npm SDK pointed at sluice, sluice in front of an upstream
// that answers as Azure OpenAI does (`sluice sim`'s /openai/deployments/{deployment}/... paths,
// which want `api-version` and the key as `api-key`): the upstream configured `dialect: azure`
// (docs/routing.md, "Azure OpenAI"). The client changes nothing but its base URL.
// Run by ctest (SLUICE_BIN) or: node --test tests/e2e/azure_upstream.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { readChatStream, serveWithConfig, start as startIn } from './lib.mjs';

const UPSTREAM_KEY = 'az-e2e-PLANTED-upstream-5e1d';
const procs = [];
let baseURL;
let simURL;
let gatewayOutput;
const start = (args, env) => startIn(procs, args, env);

before(async () => {
  const sim = await start(['sim', '--listen', '127.0.0.1:0', '--tokens', '12', '--token-delay', '2ms',
    '--require-key', UPSTREAM_KEY]);
  const gw = await serveWithConfig(procs, [
    'upstreams:',
    '  - name: azure',
    `    url: http://127.0.0.1:${sim.port}/openai?api-version=2024-10-21`,
    '    dialect: azure',
    '    key-env: E2E_AZURE_KEY',
    '    deployments: {gpt-4o: prod-gpt4o}',
  ], { E2E_AZURE_KEY: UPSTREAM_KEY });
  baseURL = `http://127.0.0.1:${gw.port}/v1`;
  simURL = `http://127.0.0.1:${sim.port}`;
  gatewayOutput = gw.output;
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
});

const client = () => new OpenAI({ baseURL, apiKey: 'sk-client-side-dummy', maxRetries: 0, timeout: 20000 });
const ask = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Say hello' }] };
const azureServed = async () => (await (await fetch(`${simURL}/sim/stats`)).json()).azure_requests;

test('a streamed chat completion from an Azure deployment', async () => {
  const before = await azureServed();
  const stream = await client().chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
  const { text, usage } = await readChatStream(stream);
  assert.ok(text.length > 0);
  assert.equal(usage?.completion_tokens, 12);
  assert.equal(await azureServed(), before + 1, 'the deployment path was asked');
});

test('a whole chat completion and embeddings from Azure deployments', async () => {
  const before = await azureServed();
  const whole = await client().chat.completions.create(ask);
  assert.equal(whole.choices[0].finish_reason, 'stop');
  assert.ok(whole.choices[0].message.content.length > 0);
  const emb = await client().embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
  assert.equal(emb.data.length, 2);
  assert.ok(emb.data[0].embedding.length > 0);
  assert.equal(await azureServed(), before + 2);
});

test('a model that no Azure path can name is a NotFoundError naming model', async () => {
  await assert.rejects(
    client().chat.completions.create({ ...ask, model: 'meta-llama/Llama-3-8B' }),
    (err) => err instanceof OpenAI.NotFoundError && err.param === 'model',
  );
});

test('the upstream key never appears in the gateway output', () => {
  assert.ok(!gatewayOutput().includes(UPSTREAM_KEY));
  assert.ok(!gatewayOutput().includes('PLANTED'));
});
