// glass serve driven by the official `openai` npm client (ctest: glass_openai_client_test, registered
// in src/server/CMakeLists.txt, which copies this file next to the build tree's node_modules).
// It starts the real `glass serve` on 127.0.0.1 (--port 0: the port is read from its "listening on"
// line) over the bundled stories260K model with server_test_support.h's chat template, waits for
// /health, then checks chat and completions (plain and streamed, the streamed text equal to the
// greedy reply), stop strings, max_tokens, seeds, logprobs, a 400 and a 401 as the SDK's error
// classes, an aborted stream (the server's sequences and KV blocks return to idle), the raw SSE
// framing, and that SIGTERM drains and exits 0. Every wait is bounded; the server is killed in the
// finally block.
//
// Without node (CMake), with a node older than 18 or without the package this reports SKIPPED (exit
// 77); GLASS_REQUIRE_FIXTURES=1 makes it fail instead, as the C++ tests do without their fixtures.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));

function skipOrFail(reason) {
  if (process.env.GLASS_REQUIRE_FIXTURES === '1') {
    console.error(`FAILED: ${reason} (GLASS_REQUIRE_FIXTURES=1: no skipping)`);
    process.exit(1);
  }
  console.log(`SKIPPED: ${reason}`);
  process.exit(SKIP);
}

// openai 6.x supports Node.js 20 and later, 4.x 18 and later (Debian 12's own nodejs is 18):
// scripts/test.sh installs the one this node runs.
const nodeMajor = Number(process.versions.node.split('.')[0]);
if (nodeMajor < 18) skipOrFail(`node ${process.versions.node} is older than the openai package supports (18)`);

let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  skipOrFail(`the openai npm package is not installed in ${here}/node_modules (${e.code ?? e.message}); ` +
             `run scripts/test.sh, or: npm install --prefix ${here} openai@6.49.0`);
}

const binary = process.env.GLASS_BINARY;
const sourceDir = process.env.GLASS_SOURCE_DIR;
if (!binary || !sourceDir) {
  console.error('FAILED: GLASS_BINARY and GLASS_SOURCE_DIR must be set (ctest sets them)');
  process.exit(1);
}
const modelPath = path.join(sourceDir, 'models', 'stories260K.gguf');
const MODEL = 'stories260K.gguf';  // the server's name for it: the file name
const KEY = 'test-key';
const EOS = '2';                   // stories260K's </s>
// server_test_support.h's kTemplate: writes BOS itself (stories260K has no template of its own).
const TEMPLATE = '{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}' +
                 '{% if add_generation_prompt %}assistant:{% endif %}';

class Failure extends Error {}
function check(cond, what) {
  if (!cond) throw new Failure(what);
}
function equal(a, b, what) {
  if (JSON.stringify(a) !== JSON.stringify(b))
    throw new Failure(`${what}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
}

async function waitFor(probe, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    let v;
    try {
      v = await probe();
    } catch {
      v = undefined;
    }
    if (v) return v;
    if (Date.now() > end) throw new Failure(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// One raw HTTP/1.1 request (no SDK, no fetch): status, headers and the whole body as text.
function raw(port, method, urlPath, body, timeoutMs = 20000) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({
      host: '127.0.0.1', port, method, path: urlPath, timeout: timeoutMs,
      headers: {
        Authorization: `Bearer ${KEY}`,
        ...(data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {}),
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

function metric(text, name) {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

// The "data: X\n\n" payloads of an SSE body; anything else in it is a failure.
function sseData(body) {
  check(body.endsWith('\n\n'), `the stream does not end with a blank line: ${JSON.stringify(body.slice(-80))}`);
  const events = body.slice(0, -2).split('\n\n');
  for (const e of events) check(e.startsWith('data: ') && !e.includes('\n'), `not a one-line data event: ${JSON.stringify(e)}`);
  return events.map((e) => e.slice(6));
}

const results = [];
async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`[ OK ] ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`[FAIL] ${name}: ${e instanceof Failure ? e.message : e.stack}`);
  }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'glass-openai-'));
let server;
let serverErr = '';
let exited = null;
// The whole run is bounded: a hang anywhere fails instead of holding ctest until its timeout.
const watchdog = setTimeout(() => {
  console.error('FAILED: the test did not finish in 150 s\n' + serverErr);
  if (server && exited === null) server.kill('SIGKILL');
  process.exit(1);
}, 150_000);

try {
  const templateFile = path.join(tmp, 'template.jinja');
  fs.writeFileSync(templateFile, TEMPLATE);
  server = spawn(binary, ['serve', '-m', modelPath, '--port', '0', '--api-key', KEY, '--chat-template-file',
                          templateFile, '-t', '1', '-c', '2048', '-np', '4', '--shutdown-timeout', '5'],
                 { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.setEncoding('utf8');
  server.stderr.on('data', (d) => { serverErr += d; });
  const exitPromise = new Promise((resolve) => server.on('exit', (code, signal) => {
    exited = { code, signal };
    resolve(exited);
  }));
  const port = await waitFor(() => {
    check(exited === null, `glass serve exited: ${JSON.stringify(exited)}\n${serverErr}`);
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(serverErr);
    return m && Number(m[1]);
  }, 20000, 'the "listening on" line');
  await waitFor(async () => (await raw(port, 'GET', '/health', undefined, 2000)).status === 200, 30000, '/health 200');

  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, timeout: 30000, maxRetries: 0 });
  const messages = [{ role: 'user', content: 'Lily and Tom went to the park.' }];

  await test('models.list names the served model', async () => {
    const list = await client.models.list();
    equal(list.data.map((m) => m.id), [MODEL], 'model ids');
  });

  let greedyChat;
  await test('chat, not streamed', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 24 });
    check(r.object === 'chat.completion', `object ${r.object}`);
    equal(r.choices.length, 1, 'choices');
    const c = r.choices[0];
    equal(c.message.role, 'assistant', 'role');
    check(typeof c.message.content === 'string' && c.message.content.length > 0, 'empty content');
    check(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
    check(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24, `completion_tokens ${r.usage.completion_tokens}`);
    equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens, 'total_tokens');
    greedyChat = r;
  });

  await test('chat, streamed: the deltas add up to the greedy reply', async () => {
    check(greedyChat, 'no non-streamed reply to compare with');
    const stream = await client.chat.completions.create({
      model: MODEL, messages, temperature: 0, max_tokens: 24, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let role = null;
    let finish = null;
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      ++chunks;
      check(chunk.object === 'chat.completion.chunk', `object ${chunk.object}`);
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta.role) role = c.delta.role;
        if (c.delta.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    check(chunks >= 3, `only ${chunks} chunks`);
    equal(role, 'assistant', 'role');
    equal(text, greedyChat.choices[0].message.content, 'streamed text');
    equal(finish, greedyChat.choices[0].finish_reason, 'finish_reason');
    check(usage, 'no usage chunk');
    equal(usage.completion_tokens, greedyChat.usage.completion_tokens, 'completion_tokens');
  });

  let greedyText;
  await test('completions, plain and streamed', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', temperature: 0, max_tokens: 48 });
    check(r.object === 'text_completion', `object ${r.object}`);
    greedyText = r.choices[0].text;
    check(greedyText.length > 0, 'empty text');
    const stream = await client.completions.create({
      model: MODEL, prompt: 'Once upon a time', temperature: 0, max_tokens: 48, stream: true,
    });
    let text = '';
    for await (const chunk of stream) for (const c of chunk.choices) text += c.text;
    equal(text, greedyText, 'streamed text');
  });

  await test('stop: finish_reason "stop", the text ends before the stop string', async () => {
    check(greedyText && greedyText.length >= 8, `greedy text too short: ${JSON.stringify(greedyText)}`);
    const at = Math.floor(greedyText.length / 2);
    const stop = greedyText.slice(at, at + 4);
    const cut = greedyText.indexOf(stop);
    const r = await client.completions.create({
      model: MODEL, prompt: 'Once upon a time', temperature: 0, max_tokens: 48, stop: [stop],
    });
    equal(r.choices[0].finish_reason, 'stop', 'finish_reason');
    check(!r.choices[0].text.includes(stop), `the text holds the stop string ${JSON.stringify(stop)}`);
    equal(r.choices[0].text, greedyText.slice(0, cut), 'text up to the stop string');
  });

  await test('max_tokens: finish_reason "length" with exactly that many tokens', async () => {
    const r = await client.completions.create({
      model: MODEL, prompt: 'Lily', temperature: 0, max_tokens: 7, logit_bias: { [EOS]: -100 },
    });
    equal(r.choices[0].finish_reason, 'length', 'finish_reason');
    equal(r.usage.completion_tokens, 7, 'completion_tokens');
    const c = await client.chat.completions.create({
      model: MODEL, messages, temperature: 0, max_completion_tokens: 5, logit_bias: { [EOS]: -100 },
    });
    equal(c.choices[0].finish_reason, 'length', 'chat finish_reason');
    equal(c.usage.completion_tokens, 5, 'chat completion_tokens');
  });

  await test('seed: the same seed repeats at temperature 0.9; seeds differ across several', async () => {
    const ask = (seed) => client.completions.create({
      model: MODEL, prompt: 'Once upon a time', temperature: 0.9, max_tokens: 24, seed, logit_bias: { [EOS]: -100 },
    }).then((r) => r.choices[0].text);
    const a = await ask(42);
    const b = await ask(42);
    equal(a, b, 'same seed');
    const texts = new Set([a]);
    for (const seed of [1, 2, 3, 4, 5, 6]) texts.add(await ask(seed));
    check(texts.size >= 2, 'seven seeds gave one text');
  });

  await test('logprobs: one entry per token, every log probability <= 0', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages, temperature: 0, max_tokens: 12, logprobs: true, top_logprobs: 3,
    });
    const content = r.choices[0].logprobs?.content;
    check(Array.isArray(content), `no choices[0].logprobs.content: ${JSON.stringify(r.choices[0])}`);
    equal(content.length, r.usage.completion_tokens, 'entries');
    for (const e of content) {
      check(typeof e.token === 'string' && Number.isFinite(e.logprob) && e.logprob <= 0, `entry ${JSON.stringify(e)}`);
      check(Array.isArray(e.top_logprobs) && e.top_logprobs.length >= 1 && e.top_logprobs.length <= 3,
            `top_logprobs ${JSON.stringify(e.top_logprobs)}`);
      for (const t of e.top_logprobs) check(t.logprob <= 0, `top entry ${JSON.stringify(t)}`);
      // Greedy: the chosen token is the most likely one.
      check(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-4, `greedy token not the top one: ${JSON.stringify(e)}`);
    }
    equal(content.map((e) => e.token).join(''), r.choices[0].message.content, 'the tokens spell the reply');
  });

  await test('response_format json_schema: every reply that stops parses and matches', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 10 }, legs: { type: 'integer', minimum: 0, maximum: 8 } },
      required: ['name', 'legs'],
      additionalProperties: false,
    };
    let stopped = 0;
    for (let seed = 1; seed <= 3; seed++) {
      const r = await client.chat.completions.create({
        model: MODEL, messages, temperature: 0.8, seed, max_tokens: 120,
        response_format: { type: 'json_schema', json_schema: { name: 'animal', strict: true, schema } },
      });
      const c = r.choices[0];
      if (c.finish_reason !== 'stop') continue;
      stopped++;
      const v = JSON.parse(c.message.content);
      check(typeof v.name === 'string' && v.name.length <= 10, `name ${JSON.stringify(v)}`);
      check(Number.isInteger(v.legs) && v.legs >= 0 && v.legs <= 8, `legs ${JSON.stringify(v)}`);
      equal(Object.keys(v).length, 2, 'keys');
    }
    check(stopped >= 2, `only ${stopped} of 3 constrained replies stopped`);
    let err;
    try {
      await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 4,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', if: {} } } },
      });
    } catch (e) {
      err = e;
    }
    check(err instanceof OpenAI.BadRequestError, `an unrepresentable schema: not a BadRequestError: ${err}`);
    equal(err.param, 'response_format.json_schema.schema', 'param');
  });

  await test('bad input: temperature out of range is OpenAI.BadRequestError 400; a wrong key 401', async () => {
    let err;
    try {
      await client.chat.completions.create({ model: MODEL, messages, temperature: 5 });
    } catch (e) {
      err = e;
    }
    check(err instanceof OpenAI.BadRequestError, `not a BadRequestError: ${err}`);
    equal(err.status, 400, 'status');
    equal(err.param, 'temperature', 'param');
    let auth;
    try {
      await new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'wrong', timeout: 10000, maxRetries: 0 })
        .models.list();
    } catch (e) {
      auth = e;
    }
    check(auth instanceof OpenAI.AuthenticationError, `not an AuthenticationError: ${auth}`);
    equal(auth.status, 401, 'status');
  });

  await test('abort mid-stream: the request ends, sequences and KV blocks return to idle', async () => {
    const before = (await raw(port, 'GET', '/metrics')).body;
    const controller = new AbortController();
    const stream = await client.completions.create({
      model: MODEL, prompt: 'Lily', temperature: 0, max_tokens: 1800, logit_bias: { [EOS]: -100 }, stream: true,
    }, { signal: controller.signal });
    let chunks = 0;
    let finish = null;
    try {
      for await (const chunk of stream) {
        finish ??= chunk.choices[0]?.finish_reason ?? null;
        if (++chunks === 3) controller.abort();
      }
    } catch (e) {
      // The SDK ends an aborted stream's iteration quietly, or throws its abort error.
      if (!(e instanceof OpenAI.APIUserAbortError || e.name === 'AbortError')) throw e;
    }
    check(controller.signal.aborted && finish === null && chunks < 1800,
          `the stream was not cut short: ${chunks} chunks, finish_reason ${finish}`);
    const idle = await waitFor(async () => {
      const m = (await raw(port, 'GET', '/metrics')).body;
      return metric(m, 'glass_running_sequences') === 0 && metric(m, 'glass_queue_depth') === 0 &&
             metric(m, 'glass_kv_blocks_used') === 0 && m;
    }, 10000, 'glass_running_sequences, glass_queue_depth and glass_kv_blocks_used at 0');
    const cancelled = metric(idle, 'glass_requests_cancelled_total') - metric(before, 'glass_requests_cancelled_total');
    const finished = metric(idle, 'glass_generation_requests_total') - metric(before, 'glass_generation_requests_total');
    // Cancelled when the server saw the client leave; run to its end when the whole reply was already
    // in the socket's buffers (the server generates faster than the client reads).
    equal(cancelled + finished, 1, 'requests ended (cancelled + finished)');
    console.log(`       the aborted request was ${cancelled === 1 ? 'cancelled by the server' : 'already generated'}`);
    const after = await client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 24 });
    equal(after.choices[0].message.content, greedyChat?.choices[0].message.content, 'a later request');
  });

  await test('raw SSE framing: "data: ...\\n\\n" events and a final "data: [DONE]"', async () => {
    for (const [urlPath, body, object] of [
      ['/v1/chat/completions', { messages, max_tokens: 8, temperature: 0, stream: true }, 'chat.completion.chunk'],
      ['/v1/completions', { prompt: 'Lily', max_tokens: 8, temperature: 0, stream: true }, 'text_completion'],
    ]) {
      const r = await raw(port, 'POST', urlPath, body);
      equal(r.status, 200, `${urlPath} status`);
      check(r.headers['content-type'].startsWith('text/event-stream'), `content-type ${r.headers['content-type']}`);
      const events = sseData(r.body);
      equal(events[events.length - 1], '[DONE]', `${urlPath}: last event`);
      check(events.length >= 3, `${urlPath}: ${events.length} events`);
      for (const e of events.slice(0, -1)) equal(JSON.parse(e).object, object, `${urlPath} event object`);
    }
  });

  await test('SIGTERM: glass serve drains and exits 0', async () => {
    server.kill('SIGTERM');
    const r = await Promise.race([exitPromise, new Promise((res) => setTimeout(() => res(null), 10000).unref())]);
    check(r, 'still running 10 s after SIGTERM');
    equal(r, { code: 0, signal: null }, 'exit');
    check(serverErr.includes('drained in'), `no "drained" line:\n${serverErr}`);
  });
} catch (e) {
  results.push({ name: 'setup', ok: false });
  console.log(`[FAIL] setup: ${e instanceof Failure ? e.message : e.stack}\n${serverErr}`);
} finally {
  if (server && exited === null) server.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
  clearTimeout(watchdog);
}

const failed = results.filter((r) => !r.ok);
console.log(`${results.length - failed.length} of ${results.length} passed`);
if (failed.length > 0) {
  console.log(`failed: ${failed.map((r) => r.name).join('; ')}`);
  console.log(serverErr);
  process.exit(1);
}
process.exit(0);  // whatever keep-alive sockets the client still holds
