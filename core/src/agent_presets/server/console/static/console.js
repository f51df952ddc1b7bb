"use strict";
// The console page: one snapshot stream in, three actions out. No build step, no CDN.
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const RISKY = new Set(["filesystem-write", "destructive", "shell"]);
  const $ = (id) => document.getElementById(id);
  let presetsShown = "";
  let pendingConfirm = null;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  function say(text) {
    const box = $("message");
    box.textContent = text || "";
    box.hidden = !text;
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Console-Token": token },
      body: JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { /* an empty answer */ }
    return { status: response.status, data };
  }

  // Asks the server first; its 409 says the person must confirm, in our own dialog.
  async function act(path, body, describe) {
    say("");
    let answer = await post(path, body);
    if (answer.status === 409 && answer.data.confirm) {
      const yes = await confirmRisky(answer.data.preset, answer.data.risk, describe);
      if (!yes) return false;
      answer = await post(path, Object.assign({}, body, { confirmed: true }));
    }
    if (answer.status !== 200) {
      say(answer.data.error || ("request failed: " + answer.status));
      return false;
    }
    return true;
  }

  function confirmRisky(preset, risk, describe) {
    const dialog = $("confirm");
    $("confirm-text").textContent = (describe ? describe + " turns on preset " : "Preset ") +
      preset + ", whose risk is " + risk + ": its tools can change or delete things " +
      "beyond the agent's own work. Turn it on for this session?";
    return new Promise((resolve) => {
      pendingConfirm = resolve;
      dialog.returnValue = "cancel";
      dialog.showModal();
    });
  }
  $("confirm").addEventListener("close", () => {
    const resolve = pendingConfirm;
    pendingConfirm = null;
    if (resolve) resolve($("confirm").returnValue === "on");
  });

  function renderContext(context) {
    const dl = $("context");
    dl.replaceChildren();
    for (const [k, v] of Object.entries(context || {})) {
      dl.append(el("dt", { text: k }), el("dd", { text: JSON.stringify(v) }));
    }
  }

  let lastPresets = [];
  function renderPresets(presets) {
    lastPresets = presets;
    const key = presets.map((p) => p.name).join("\n");
    const body = $("presets");
    if (key !== presetsShown) {
      presetsShown = key;
      body.replaceChildren();
      for (const p of presets) {
        const select = el("select", { "aria-label": p.name, "data-preset": p.name });
        for (const s of ["auto", "on", "off"]) select.append(el("option", { value: s, text: s }));
        select.addEventListener("change", async () => {
          const body = { preset: p.name, state: select.value };
          if (chosen) body.principal = chosen;  // that principal's own override
          const ok = await act("/api/override", body);
          if (!ok) select.value = select.dataset.state;  // the server's state, not the wish
        });
        body.append(el("tr", { "data-preset": p.name },
          el("td", { text: p.name }), el("td", { text: p.group || "" }),
          el("td", {}, el("span", { class: "risk" + (RISKY.has(p.risk) ? " risky" : ""), text: p.risk })),
          el("td", { class: "active" }), el("td", { class: "why" }), el("td", {}, select)));
      }
    }
    for (const p of presets) {
      const row = body.querySelector('tr[data-preset="' + CSS.escape(p.name) + '"]');
      const active = row.querySelector(".active");
      active.textContent = p.active ? "on" : "off";
      active.className = "active " + (p.active ? "yes" : "no");
      row.querySelector(".why").textContent = p.reason;
      const select = row.querySelector("select");
      select.dataset.state = p.state;
      if (document.activeElement !== select) select.value = p.state;
    }
  }

  // Agent words come as r.shown (escaped by the server) and go in as textContent only.
  function renderRequests(pending) {
    const list = $("requests");
    list.replaceChildren();
    $("no-requests").hidden = pending.length > 0;
    for (const r of pending) {
      const s = r.shown;
      const what = s.what + (s.preset ? " (" + s.preset + ")" : "");
      const approve = el("button", { class: "approve", type: "button", text: "Approve" });
      const deny = el("button", { type: "button", text: "Deny" });
      const body = { id: r.id };
      if (r.kind === "call") body.digest = r.digest;  // approves the call shown, or nothing
      approve.addEventListener("click", () => act("/api/approve", body, "Approving " + s.id));
      deny.addEventListener("click", () => act("/api/deny", { id: r.id }));
      const item = el("li", { "data-request": r.id },
        el("span", { class: "rid", text: s.id }), el("span", { text: r.kind }),
        el("span", { text: what }), el("span", { class: "who muted", text: "by " + (r.principal || "local") }),
        el("span", { class: "muted", text: "expires " + s.expires }),
        approve, deny);
      if (r.kind === "call") {
        // Every argument in full, one per line: the person approves the call that runs.
        const args = el("div", { class: "arguments" });
        for (const [name, value] of s.arguments) {
          args.append(el("div", {}, el("span", { class: "arg-name", text: name }), "=",
            el("span", { class: "arg-value", text: value })));
        }
        if (!s.arguments.length) args.append(el("div", { text: "no arguments" }));
        item.append(args, el("span", { class: "digest muted", text: "sha256:" + s.digest }));
      } else {
        item.append(el("span", { class: "reason", text: s.reason ? "“" + s.reason + "”" : "" }));
      }
      list.append(item);
    }
  }

  function renderViews(views) {
    const box = $("views");
    $("no-views").hidden = views.length > 0;
    const seen = new Set();
    for (const v of views) {
      const id = "view-" + v.runtime;
      seen.add(id);
      let figure = document.getElementById(id);
      if (!figure) {
        figure = el("figure", { id, "data-runtime": v.runtime },
          el("figcaption"), el("img", { alt: v.runtime }));
        box.append(figure);
      }
      figure.querySelector("figcaption").textContent = v.runtime;
      const img = figure.querySelector("img");
      // As an image, never as markup: an SVG the agent shaped cannot run script here.
      const src = v.kind === "svg"
        ? "data:image/svg+xml;charset=utf-8," + encodeURIComponent(v.svg) : "";
      if (img.getAttribute("src") !== src) img.setAttribute("src", src);
      img.alt = v.kind === "svg" ? v.runtime + " view" : v.runtime + ": " + (v.error || "no view");
    }
    for (const child of [...box.children]) if (!seen.has(child.id)) child.remove();
  }

  function ms(v) { return v === null || v === undefined ? "–" : v.toFixed(1) + " ms"; }

  function renderStats(stats, hasLog) {
    const dl = $("stats");
    dl.replaceChildren();
    const decided = (stats.decisions.approved || 0) + (stats.decisions.denied || 0);
    const rows = [
      ["calls", String(stats.calls)],
      ["refusals", String(stats.refusals) + (stats.refusals
        ? " (" + Object.entries(stats.refusals_by_gate).map(([g, n]) => g + " " + n).join(", ") + ")" : "")],
      ["latency p50 / p95", ms(stats.latency_ms.p50) + " / " + ms(stats.latency_ms.p95)],
      ["approval rate", stats.approval_rate === null ? "–"
        : Math.round(stats.approval_rate * 100) + "% of " + decided + " decided"],
    ];
    if (!hasLog) rows.unshift(["event log", "off (serve --no-event-log)"]);
    for (const [k, v] of rows) dl.append(el("dt", { text: k }), el("dd", { text: v }));
    renderChart(stats.calls_by_tool);
  }

  // Calls by tool as horizontal bars: inline SVG built from DOM nodes, no library.
  function renderChart(byTool) {
    const NS = "http://www.w3.org/2000/svg";
    const entries = Object.entries(byTool).slice(0, 8);
    const box = $("chart");
    box.replaceChildren();
    if (!entries.length) return;
    const max = Math.max(...entries.map(([, n]) => n));
    const rowH = 22, labelW = 210, barW = 220, width = labelW + barW + 50;
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", "0 0 " + width + " " + (entries.length * rowH + 4));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "calls by tool");
    entries.forEach(([tool, n], i) => {
      const y = i * rowH + 2;
      const label = document.createElementNS(NS, "text");
      label.setAttribute("x", labelW - 6); label.setAttribute("y", y + 15);
      label.setAttribute("text-anchor", "end"); label.setAttribute("font-size", "11");
      label.textContent = tool.length > 32 ? tool.slice(0, 31) + "…" : tool;
      const bar = document.createElementNS(NS, "rect");
      bar.setAttribute("x", labelW); bar.setAttribute("y", y + 3);
      bar.setAttribute("width", Math.max(2, (n / max) * barW)); bar.setAttribute("height", rowH - 8);
      bar.setAttribute("rx", 3); bar.setAttribute("fill", "#2f6feb");
      const count = document.createElementNS(NS, "text");
      count.setAttribute("x", labelW + Math.max(2, (n / max) * barW) + 5); count.setAttribute("y", y + 15);
      count.setAttribute("font-size", "11"); count.textContent = String(n);
      svg.append(label, bar, count);
    });
    box.append(svg);
  }

  function describe(e) {
    switch (e.kind) {
      case "call": return e.tool + (e.ok ? " ok" : " failed: " + e.error) + " in " + ms(e.latency_ms);
      case "refusal": return (e.tool ?? "an unknown tool (" + e.tool_len + " chars)") + " refused by " + e.gate + (e.count > 1 ? " ×" + e.count : "");
      case "request": return e.id + " asks " + (e.asks === "call" ? "to run " + e.tool : e.preset + " " + e.state);
      case "decision": return e.id + " " + e.outcome + " by " + e.by;
      case "change": return e.preset + " " + (e.previous || "?") + " → " + e.state + " by " + e.by
        + (e.principal ? " for " + e.principal : "");
      default: return JSON.stringify(e);
    }
  }

  function renderEvents(events) {
    const body = $("events");
    body.replaceChildren();
    $("no-events").hidden = events.length > 0;
    for (const e of [...events].reverse()) {
      const when = new Date(e.ts * 1000).toISOString().slice(11, 19);
      body.append(el("tr", { class: "kind-" + e.kind + (e.outcome ? " outcome-" + e.outcome : "") },
        el("td", { text: when }), el("td", { text: e.kind }), el("td", { text: describe(e) })));
    }
  }

  // "" is the server's own state; a name shows (and steers) that principal's.
  let chosen = "";
  let lastState = null;
  $("principal").addEventListener("change", () => {
    chosen = $("principal").value;
    if (lastState) render(lastState);
  });

  function renderPrincipals(names, own) {
    const select = $("principal");
    const wanted = ["", ...names.filter((n) => n !== "local")];
    const have = [...select.options].map((o) => o.value);
    if (wanted.join("\n") !== have.join("\n")) {
      select.replaceChildren(el("option", { value: "", text: "the server (everyone who follows it)" }));
      for (const n of wanted.slice(1)) select.append(el("option", { value: n, text: n }));
    }
    if (!wanted.includes(chosen)) chosen = "";
    select.value = chosen;
    $("principal-note").textContent = !chosen
      ? Object.keys(own).length + " principals with a context or overrides of their own; "
        + "the others follow the server"
      : own[chosen] ? chosen + " has a context or overrides of its own"
      : chosen + " follows the server";
  }

  function render(state) {
    lastState = state;
    const own = state.by_principal || {};
    // The principals with state of their own, and any that asked for something.
    const asking = state.pending.map((r) => r.principal).filter((n) => n);
    renderPrincipals([...new Set([...(state.principals || ["local"]), ...asking])].sort(), own);
    const theirs = chosen && own[chosen] ? own[chosen] : state;
    renderContext(theirs.context);
    renderPresets(theirs.presets);
    renderRequests(chosen ? state.pending.filter((r) => r.principal === chosen) : state.pending);
    renderViews(state.views);
    renderStats(state.stats, state.event_log);
    renderEvents(state.events);
    document.body.dataset.ready = "1";
  }

  function connect() {
    const stream = new EventSource("/api/stream?token=" + encodeURIComponent(token));
    stream.addEventListener("state", (m) => render(JSON.parse(m.data)));
    stream.addEventListener("views", (m) => renderViews(JSON.parse(m.data)));
    stream.onopen = () => { $("live").textContent = "live"; $("live").className = "live on"; };
    stream.onerror = () => { $("live").textContent = "reconnecting…"; $("live").className = "live off"; };
  }
  connect();
})();
