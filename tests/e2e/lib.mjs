// Shared by the e2e tests (not a test file itself): starting the real binaries and waiting on
// background responses.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
export const bin = process.env.SLUICE_BIN ?? path.join(here, '..', '..', 'build', 'sluice');

// Starts `bin args...`; resolves with its port once it says "listening on HOST:PORT". Every
// process started is in `procs`, for the test file's after() to stop. Its output is read all the
// time (a full pipe would block it) and kept whole: tests search all of it (a planted key must
// appear nowhere).
export function start(procs, args, env = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(p);
    let out = '';
    const onData = (d) => {
      out += d.toString();
      const m = out.match(/listening on [0-9.]+:(\d+)/);
      if (m) resolve({ proc: p, port: Number(m[1]), output: () => out });
    };
    p.stdout.on('data', onData);
    p.stderr.on('data', onData);
    p.on('exit', (code) => reject(new Error(`${args[0]} exited with ${code}: ${out}`)));
    setTimeout(() => reject(new Error(`${args[0]} did not start: ${out}`)), 10000).unref();
  });
}

// Starts `sluice serve` on a free port with a config file made of `lines` (YAML), `env` added to
// its environment (the upstreams' key-env variables).
export function serveWithConfig(procs, lines, env = {}, threads = 1) {
  const config = path.join(mkdtempSync(path.join(tmpdir(), 'sluice-e2e-')), 'sluice.yaml');
  writeFileSync(config, [...lines, ''].join('\n'));
  return start(procs, ['serve', '--listen', '127.0.0.1:0', '--threads', String(threads), '--config', config], env);
}

// An openai SDK chat stream read to its end: the text of its first choice, its finish reason, the
// usage chunk's usage (null without one) and the chunk ids seen.
export async function readChatStream(stream) {
  const out = { text: '', finish: null, usage: null, ids: new Set() };
  for await (const chunk of stream) {
    out.ids.add(chunk.id);
    if (chunk.usage) out.usage = chunk.usage;
    const c = chunk.choices[0];
    out.text += c?.delta?.content ?? '';
    if (c?.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Retrieves background response `id` until it is final.
export async function untilFinal(c, id) {
  for (let i = 0; i < 400; i++) {
    const r = await c.responses.retrieve(id);
    if (r.status !== 'queued' && r.status !== 'in_progress') return r;
    await sleep(25);
  }
  throw new Error(`response ${id} did not finish`);
}
