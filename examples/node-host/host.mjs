#!/usr/bin/env node
// A host app written in Node, with no Python in it (docs/hosts.md).
//
// It is a sketch pad with two views, the scene and the canvas. It serves its own
// tools over MCP on stdio (the official TypeScript SDK), and whenever its view
// changes it tells a running `presets serve` its context, so the tools presets
// serves follow what the app shows:
//
//   view scene  -> {"surface": "scene",  "activity": null}
//   view canvas -> {"surface": "canvas", "activity": "drawing"}
//
// The view changes when a tool switches it (switch_view) or when the person does
// (here: SIGUSR1 toggles it, standing in for a click in the app's window). The
// context goes over the control socket, STATE/control.sock, by default, or over
// the console's HTTP endpoint with PRESETS_PUSH=http (the server must run with
// --console; the URL and the host credential are in STATE/host-credential.json).
//
// Environment:
//   PRESETS_STATE_DIR  the state directory of the presets serve to tell (required)
//   PRESETS_PUSH       socket (default) or http
//
// Everything it says goes to stderr: stdout carries MCP.

import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import * as z from "zod";

const stateDir = process.env.PRESETS_STATE_DIR;
const via = process.env.PRESETS_PUSH || "socket";
if (!stateDir) {
  fail("set PRESETS_STATE_DIR to the state directory of the presets serve to tell");
}
if (via !== "socket" && via !== "http") {
  fail(`PRESETS_PUSH=${via}: use socket or http`);
}

const CONTEXT_OF = {
  scene: { surface: "scene", activity: null },
  canvas: { surface: "canvas", activity: "drawing" },
};

// The app's own state: what it shows, and what was drawn on the canvas.
const app = { view: "scene", lines: [] };

function say(text) {
  process.stderr.write(`node-host: ${text}\n`);
}

function fail(text) {
  say(text);
  process.exit(2);
}

// -------------------------------------------------------------- telling presets

// One change, as the control socket's `context` op. "by" names who changed it
// on the server's event log line.
function contextMessage(view) {
  return { op: "context", set: CONTEXT_OF[view], by: "host" };
}

// The server's answer, {"v": 1, "ok": ..., "result" | "error": ...}, or an
// answer of our own (code "no-server") when no server listens.
function noServer(why) {
  return {
    ok: false,
    error: { code: "no-server", message: `no presets server answers for ${stateDir} (${why})` },
  };
}

function overSocket(message) {
  return new Promise((resolve) => {
    const sock = net.createConnection({ path: path.join(stateDir, "control.sock") });
    let data = "";
    let done = false;
    const finish = (answer) => {
      if (!done) {
        done = true;
        sock.destroy();
        resolve(answer);
      }
    };
    sock.setEncoding("utf8");
    sock.setTimeout(10_000, () => finish(noServer("it did not answer within 10 s")));
    // One JSON object per line each way (docs/control.md).
    sock.on("connect", () => sock.write(JSON.stringify(message) + "\n"));
    sock.on("data", (chunk) => {
      data += chunk;
      const end = data.indexOf("\n");
      if (end >= 0) {
        finish(JSON.parse(data.slice(0, end)));
      }
    });
    sock.on("error", (err) => finish(noServer(err.code || err.message)));
    sock.on("close", () => finish(noServer("it closed the connection")));
  });
}

async function overHttp(message) {
  const file = path.join(stateDir, "host-credential.json");
  // Twice at most: a refused token may be an older server's, so read the file again.
  for (let attempt = 0; attempt < 2; attempt++) {
    let credential;
    try {
      credential = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (err) {
      return noServer(`no ${file}: is it running with --console?`);
    }
    let response;
    try {
      response = await fetch(credential.url, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${credential.token}`,
          "Content-Type": "application/json",
        },
        body: JSON.stringify(message),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      return noServer(err.cause?.code || err.message);
    }
    if (response.status === 401 && attempt === 0) {
      continue;
    }
    return await response.json();
  }
  return noServer("it refused the host credential");
}

async function tellPresets(view) {
  const message = contextMessage(view);
  const answer = via === "http" ? await overHttp(message) : await overSocket(message);
  if (answer.ok) {
    const changed = answer.result.changed.join(", ") || "nothing";
    say(`context pushed over ${via}: view ${view} (changed: ${changed})`);
  } else {
    say(`context not pushed over ${via}: ${answer.error.message}`);
  }
  return answer;
}

async function show(view) {
  app.view = view;
  return await tellPresets(view);
}

// -------------------------------------------------------------- the app's tools

const server = new McpServer({ name: "node-host", version: "1.0.0" });

function reply(data, isError = false) {
  return { content: [{ type: "text", text: JSON.stringify(data) }], isError };
}

server.registerTool(
  "switch_view",
  {
    title: "Switch the app's view",
    description: "Show the scene or the canvas. The tools you get follow the view.",
    inputSchema: { view: z.enum(["scene", "canvas"]) },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
  },
  async ({ view }) => {
    const answer = await show(view);
    return reply({
      view: app.view,
      pushed: answer.ok,
      presets: answer.ok ? answer.result.context : answer.error.message,
    });
  },
);

server.registerTool(
  "draw_line",
  {
    title: "Draw a line on the canvas",
    description: "Draw a line from (x1, y1) to (x2, y2). Only while the canvas shows.",
    inputSchema: { x1: z.number(), y1: z.number(), x2: z.number(), y2: z.number() },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
  },
  async (line) => {
    if (app.view !== "canvas") {
      return reply({ error: "the canvas is not shown: switch_view to canvas first" }, true);
    }
    app.lines.push(line);
    return reply({ lines: app.lines.length });
  },
);

server.registerTool(
  "app_state",
  {
    title: "What the app shows",
    description: "The app's view and the lines drawn on its canvas.",
    inputSchema: {},
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
  },
  async () => reply({ view: app.view, lines: app.lines }),
);

// The person switches the view (a click in a real app's window).
process.on("SIGUSR1", () => {
  void show(app.view === "scene" ? "canvas" : "scene");
});

await server.connect(new StdioServerTransport());
say(`ready (pid ${process.pid}), pushing over ${via}`);
// Report the state the app starts in: the server may hold another host's context.
await tellPresets(app.view);
