// A real ACP client for `serve`: the official TypeScript SDK's client (@agentclientprotocol/sdk
// 2.4.0, stable v1 entry point) playing the client's part of servable scenarios (issue 15).
//
// Input (a file named by the first argument, or standard input): one JSON plan
//   {"agent": ["python", "-m", "zeroclaw_ref.conformance", "serve", "--connect", SOCK],
//    "capabilities": {...}?,           // clientCapabilities; default: fs read+write, terminal
//    "wait_ms": 10000?,                // bound of every wait (a safety net, never a verdict)
//    "scenarios": [SHOW, ...]}         // `show --json` objects, played in order, one agent
//                                      // process (one serve connection) each; a SHOW may carry
//                                      // "agent" (its own command) and "binds" (see below)
// Output: one JSON line per scenario on standard output:
//   {"scenario": ID, "ok": bool, "error": TEXT?, "exit": CODE, "stderr": TAIL}
// `ok` only says the driver took every step; the verdict is serve's.
//
// What the driver does, as an editor would: create `client_files` in a fresh temporary cwd,
// spawn the agent, send `initialize` with its OWN protocolVersion/capabilities/clientInfo (serve
// binds them), then take the `steps` in order, each as soon as its `after` conditions hold
// (updates / agent requests received, results of earlier requests arrived). Requests are not
// awaited (a prompt stays pending while later steps run). Agent requests are answered from the
// next response step of their method: `session/request_permission` with the scripted result or
// error; `fs/*` and `terminal/*` ("auto") from real files in cwd and real child processes.
//
// "binds" ({"<frame>": {"<json pointer>": "<name>"}}) says which placeholder a response to the
// send at <frame> defines, so later steps' "${name}" strings take the agent's actual values;
// ${WORKSPACE} is the cwd.
//
// Usage: node serve_ts_client.mjs [PLAN_FILE] [--modules NODE_MODULES_DIR]

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const modIndex = args.indexOf("--modules");
const modules = resolve(
  modIndex >= 0 ? args[modIndex + 1] : join(here, "..", "..", ".peers", "node_modules"),
);
const planArg = args.find((a, i) => !a.startsWith("--") && (modIndex < 0 || i !== modIndex + 1));
const entry = join(modules, "@agentclientprotocol", "sdk", "dist", "v1", "stable", "acp.js");
const { client, methods, ndJsonStream, RequestError } = await import(pathToFileURL(entry).href);

const plan = JSON.parse(planArg ? readFileSync(planArg, "utf8") : readFileSync(0, "utf8"));
const WAIT = plan.wait_ms ?? 10000;
// SDK 2.4.0 models every client capability of the stable schema; the object-valued ones
// are offered by `{}` (elicitation modes, session notices and compaction).
const CAPABILITIES = plan.capabilities ?? {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  elicitation: { form: {}, url: {} },
  session: { notices: {}, compaction: {} },
};
const CLIENT_INFO = { name: "zeroclaw-ts-sdk-driver", version: "2.4.0" };

// ---- placeholders -------------------------------------------------------------------------

function substitute(value, bound) {
  if (typeof value === "string") {
    const whole = /^\$\{([A-Za-z0-9_]+)\}$/.exec(value);
    if (whole && whole[1] in bound) return bound[whole[1]];
    return value.replace(/\$\{([A-Za-z0-9_]+)\}/g, (m, name) =>
      name in bound ? String(bound[name]) : m,
    );
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, bound));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, bound)]));
  }
  return value;
}

function atPointer(doc, pointer) {
  let node = doc;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (node === null || typeof node !== "object" || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

// An SDK client sends well-typed requests: a bare-string prompt (some scenarios' shorthand; serve
// judges a client request by method and id) becomes one text block, and session/new and
// session/load carry the mcpServers list the schema requires.
function wellFormed(method, params) {
  if (!params || typeof params !== "object" || Array.isArray(params)) return params;
  const out = { ...params };
  if (method === methods.agent.session.prompt && typeof out.prompt === "string") {
    out.prompt = [{ type: "text", text: out.prompt }];
  }
  if ((method === methods.agent.session.new || method === methods.agent.session.load) && !("mcpServers" in out)) {
    out.mcpServers = [];
  }
  return out;
}

// ---- real files and processes (the "auto" answers) -----------------------------------------

function resolvePath(cwd, path) {
  return isAbsolute(path) ? path : join(cwd, path);
}

function readText(cwd, params) {
  let text;
  try {
    text = readFileSync(resolvePath(cwd, params.path), "utf8");
  } catch (error) {
    if (error.code === "ENOENT") throw RequestError.resourceNotFound(params.path);
    throw RequestError.internalError({ details: String(error) });
  }
  if (params.line == null && params.limit == null) return { content: text };
  // line is 1-based; limit counts lines (ACP fs/read_text_file)
  const lines = text.split(/(?<=\n)/);
  const start = Math.max(1, params.line ?? 1) - 1;
  const end = params.limit == null ? lines.length : start + params.limit;
  return { content: lines.slice(start, end).join("") };
}

function writeText(cwd, params) {
  const target = resolvePath(cwd, params.path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, params.content, "utf8");
  return {};
}

class Terminals {
  constructor(cwd) {
    this.cwd = cwd;
    this.next = 1;
    this.all = new Map();
  }

  create(params) {
    const id = `term-${this.next++}`;
    const env = { ...process.env };
    for (const { name, value } of params.env ?? []) env[name] = value;
    const child = spawn(params.command, params.args ?? [], {
      cwd: params.cwd ? resolvePath(this.cwd, params.cwd) : this.cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const term = { child, output: Buffer.alloc(0), truncated: false, exit: null };
    const limit = params.outputByteLimit ?? null;
    const take = (chunk) => {
      term.output = Buffer.concat([term.output, chunk]);
      if (limit != null && term.output.length > limit) {
        // keep the end, cut at a character boundary (ACP terminal/output truncation)
        let cut = term.output.length - limit;
        while (cut < term.output.length && (term.output[cut] & 0xc0) === 0x80) cut++;
        term.output = term.output.subarray(cut);
        term.truncated = true;
      }
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    term.exited = new Promise((done) => {
      child.on("error", (error) => {
        take(Buffer.from(String(error)));
        term.exit = { exitCode: 127, signal: null };
        done(term.exit);
      });
      child.on("close", (code, signal) => {
        term.exit = { exitCode: code, signal: signal ?? null };
        done(term.exit);
      });
    });
    this.all.set(id, term);
    // answer once the command really runs (or failed to start), as Python's
    // create_subprocess_exec does: an agent may kill it the moment it has the id
    return new Promise((done) => {
      const answer = () => done({ terminalId: id });
      child.once("spawn", answer);
      child.once("error", answer);
    });
  }

  get(params) {
    const term = this.all.get(params.terminalId);
    if (!term) throw RequestError.resourceNotFound(params.terminalId);
    return term;
  }

  output(params) {
    const term = this.get(params);
    const result = { output: term.output.toString("utf8"), truncated: term.truncated };
    if (term.exit) result.exitStatus = term.exit;
    return result;
  }

  async waitForExit(params) {
    return await this.get(params).exited;
  }

  kill(params) {
    const term = this.get(params);
    if (!term.exit) term.child.kill("SIGKILL");
    return {};
  }

  release(params) {
    const term = this.get(params);
    if (!term.exit) term.child.kill("SIGKILL");
    this.all.delete(params.terminalId);
    return {};
  }

  closeAll() {
    for (const term of this.all.values()) if (!term.exit) term.child.kill("SIGKILL");
  }
}

// ---- one scenario --------------------------------------------------------------------------

const AGENT_REQUESTS = [
  methods.client.session.requestPermission,
  methods.client.fs.readTextFile,
  methods.client.fs.writeTextFile,
  methods.client.terminal.create,
  methods.client.terminal.output,
  methods.client.terminal.waitForExit,
  methods.client.terminal.kill,
  methods.client.terminal.release,
  methods.client.elicitation.create, // answered with the scripted result: the harness is the user
];

async function play(show) {
  const cwd = mkdtempSync(join(tmpdir(), "zc-ts-client-"));
  for (const [rel, text] of Object.entries(show.client_files ?? {})) {
    const target = join(cwd, rel);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text, "utf8");
  }
  const command = show.agent ?? plan.agent;
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  const exited = new Promise((done) => child.on("close", (code) => done(code)));

  const state = { updates: 0, requests: 0, results: new Set(), closed: false };
  const bound = { WORKSPACE: cwd };
  const pending = []; // agent requests waiting for their response step
  const waiters = new Set();
  const changed = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const until = (predicate, what) =>
    new Promise((done, fail) => {
      let timer;
      const check = () => {
        if (predicate()) {
          waiters.delete(check);
          clearTimeout(timer);
          done();
        } else if (state.closed) {
          waiters.delete(check);
          clearTimeout(timer);
          fail(new Error(`the agent closed the connection while waiting for ${what}`));
        }
      };
      timer = setTimeout(() => {
        waiters.delete(check);
        fail(new Error(`timed out after ${WAIT} ms waiting for ${what}`));
      }, WAIT);
      waiters.add(check);
      check();
    });

  // Count what arrives on the wire, before the SDK validates it: `after` counts every
  // session/update and every agent request, including ones the SDK would reject.
  const wire = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const counted = wire.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        if (message && typeof message === "object" && typeof message.method === "string") {
          if (message.id === undefined && message.method === methods.client.session.update) {
            state.updates++;
          } else if (message.id !== undefined) {
            state.requests++;
          }
        }
        controller.enqueue(message);
        changed();
      },
      flush() {
        state.closed = true;
        changed();
      },
    }),
  );
  const stream = { readable: counted, writable: wire.writable };
  const terminals = new Terminals(cwd);
  const auto = {
    [methods.client.fs.readTextFile]: (p) => readText(cwd, p),
    [methods.client.fs.writeTextFile]: (p) => writeText(cwd, p),
    [methods.client.terminal.create]: (p) => terminals.create(p),
    [methods.client.terminal.output]: (p) => terminals.output(p),
    [methods.client.terminal.waitForExit]: (p) => terminals.waitForExit(p),
    [methods.client.terminal.kill]: (p) => terminals.kill(p),
    [methods.client.terminal.release]: (p) => terminals.release(p),
  };

  let app = client({ name: CLIENT_INFO.name })
    .onNotification(methods.client.session.update, () => {})
    .onNotification(methods.client.elicitation.complete, () => {});
  for (const method of AGENT_REQUESTS) {
    app = app.onRequest(method, ({ params }) =>
      new Promise((answer, refuse) => {
        pending.push({ method, params, answer, refuse });
        changed();
      }),
    );
  }

  const outstanding = [];
  let error = null;
  try {
    await app.connectWith(stream, async (ctx) => {
      for (const step of show.steps) {
        const after = step.after ?? {};
        const needs = after.results ?? [];
        const what = `frame ${step.frame} (${step.kind} ${step.method})`;
        await until(
          () =>
            state.updates >= (after.updates ?? 0) &&
            state.requests >= (after.requests ?? 0) &&
            needs.every((frame) => state.results.has(frame)),
          `the conditions of ${what}: ${JSON.stringify(after)}`,
        );
        if (step.kind === "response") {
          await until(() => pending.some((p) => p.method === step.method), `the agent's ${step.method} for ${what}`);
          const request = pending.splice(pending.findIndex((p) => p.method === step.method), 1)[0];
          if (step.auto && auto[step.method]) {
            // a real client answers from its files and processes; never blocks later steps
            Promise.resolve()
              .then(() => auto[step.method](request.params))
              .then(request.answer, request.refuse);
          } else if (step.error) {
            const e = substitute(step.error, bound);
            request.refuse(new RequestError(e.code, e.message, e.data));
          } else {
            request.answer(substitute(step.result ?? {}, bound));
          }
          continue;
        }
        let params = substitute(step.params ?? {}, bound);
        params = wellFormed(step.method, params);
        if (step.method === methods.agent.initialize) {
          params = {
            protocolVersion: 1,
            clientCapabilities: CAPABILITIES,
            clientInfo: CLIENT_INFO,
          };
        }
        if (step.kind === "notification") {
          await ctx.notify(step.method, params);
          continue;
        }
        const binds = (show.binds ?? {})[String(step.frame)] ?? {};
        const settle = (message) => {
          for (const [pointer, name] of Object.entries(binds)) {
            const value = atPointer(message, pointer);
            if (value !== undefined) bound[name] = value;
          }
          state.results.add(step.frame);
          changed();
        };
        outstanding.push(
          ctx.request(step.method, params).then(
            (result) => settle({ result }),
            (e) => settle({ error: { code: e.code, message: e.message, data: e.data } }),
          ),
        );
        // a request's result may bind what the very next step uses (session/new -> sid)
        if (Object.keys(binds).length) await outstanding.at(-1);
      }
      // The steps are done: answer what a real client would answer on its own (fs/terminal),
      // then wait for every request's response before closing the connection.
      const drain = setInterval(() => {
        while (pending.some((p) => auto[p.method])) {
          const request = pending.splice(pending.findIndex((p) => auto[p.method]), 1)[0];
          Promise.resolve()
            .then(() => auto[request.method](request.params))
            .then(request.answer, request.refuse);
        }
      }, 20);
      let timer;
      try {
        await Promise.race([
          Promise.all(outstanding),
          new Promise((_, fail) => {
            timer = setTimeout(
              () => fail(new Error(`timed out after ${WAIT} ms waiting for the responses`)),
              WAIT,
            );
          }),
        ]);
      } finally {
        clearTimeout(timer);
        clearInterval(drain);
      }
    });
  } catch (e) {
    error = String(e?.stack ?? e);
  }
  child.stdin.end();
  const killer = setTimeout(() => child.kill("SIGKILL"), 4 * WAIT);
  const exit = await exited;
  clearTimeout(killer);
  terminals.closeAll();
  rmSync(cwd, { recursive: true, force: true });
  return { scenario: show.scenario, ok: error === null, error, exit, stderr: stderr.slice(-2000) };
}

for (const show of plan.scenarios) {
  const outcome = await play(show);
  process.stdout.write(JSON.stringify(outcome) + "\n");
}
process.exit(0);
