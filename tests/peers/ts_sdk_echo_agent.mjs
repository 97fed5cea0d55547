// A foreign ACP agent for the oracle: the smallest agent on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, stable ACP v1 entry point), written on the API its README
// documents (`agent({name})`, `onRequest(methods.agent..., handler)`, `connect(stream)`), because
// the package ships no example agent (its `files` list leaves `dist/examples` out).
//
// Behaviour, all of it the SDK's except these handlers: `initialize` answers protocol version 1
// and no optional capability; `session/new` returns a fresh random id; `session/prompt` on a
// session it created streams one `agent_message_chunk` ("Echo: <text of the text blocks>") and
// ends with `end_turn`, and on any other id fails with the SDK's session-not-found error (-32002);
// `session/cancel` is accepted and ignored (a turn never waits, so there is nothing to stop).
// Everything else (framing, envelopes, parse errors, unknown methods, parameter validation,
// "must be initialized") is the SDK's own.
//
// Usage: node ts_sdk_echo_agent.mjs [NODE_MODULES_DIR]
// NODE_MODULES_DIR defaults to <repository>/.peers/node_modules, where .ci/run installs the SDK.

import { randomUUID } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = resolve(process.argv[2] ?? join(here, "..", "..", ".peers", "node_modules"));
const entry = join(modules, "@agentclientprotocol", "sdk", "dist", "v1", "stable", "acp.js");
const { agent, methods, ndJsonStream, PROTOCOL_VERSION, RequestError } = await import(
  pathToFileURL(entry).href
);

const sessions = new Set();

const app = agent({ name: "ts-sdk-echo-agent" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "ts-sdk-echo-agent", version: "2.4.0" },
    authMethods: [],
  }))
  .onRequest(methods.agent.session.new, () => {
    const sessionId = randomUUID();
    sessions.add(sessionId);
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    if (!sessions.has(params.sessionId)) {
      throw RequestError.sessionNotFound(params.sessionId);
    }
    const text = params.prompt
      .filter((block) => block.type === "text")
      .map((block) => block.text)
      .join("");
    await client.notify(methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `Echo: ${text}` } },
    });
    return { stopReason: "end_turn" };
  })
  .onNotification(methods.agent.session.cancel, () => {});

const connection = app.connect(
  ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);
await connection.closed;
