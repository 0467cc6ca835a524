// The page `lathe serve` serves at `/`. It holds no data: everything comes from the /v1
// API with the token, which arrives once in the URL fragment (#token=...) and is then kept
// in sessionStorage only. Every string the server sends goes into the page as text
// (text nodes, textContent), never as HTML.
"use strict";

const TOKEN_KEY = "lathe.token";
const POLL_MS = 2000;
const SILENT_STREAM_MS = 45_000; // the server pings every 15 s: this much silence is a dead stream
const MAX_RETRY_MS = 10_000;
// Events after which a session's status or approvals changed: ask now, not at the next poll.
const CHANGES_STATE = new Set(["run_started", "run_finished", "approval_requested", "approval_resolved"]);

const $ = (id) => document.getElementById(id);

let token = null;
let sessions = null; // the last GET /v1/sessions
let current = null; // the selected session: {id, controller, bubble, tools, approvals}
let polling = false;
let refreshTimer = null;
// The messages this page sent that wait behind a run, by session id: [{text, after, at}]
// (`after`: the last event id drawn then; `at`: when the server said it queued it).
const waiting = new Map();
const QUEUED = "Queued: it runs after the current run.";

// ---- helpers

// el("div", {class: "x", testid: "y", onclick: f}, "text", child): strings become text nodes.
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined && child !== ""));
  return node;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const plural = (count, noun) => `${count} ${noun}${count === 1 ? "" : "s"}`;
const pretty = (value) => JSON.stringify(value, null, 2);

function formatCost(costUsd, tokens) {
  if (costUsd === null || costUsd === undefined) return plural(tokens ?? 0, "token");
  return `$${costUsd.toFixed(costUsd < 0.01 ? 4 : 2)}`;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

// Runs a user action; what fails is shown on the error line.
async function guarded(action) {
  clearError();
  try {
    await action();
  } catch (error) {
    showError(error.message);
  }
}

// ---- the token and the API

function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    sessionStorage.setItem(TOKEN_KEY, given);
    fragment.delete("token");
    const rest = fragment.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function askForToken(message) {
  token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  current?.controller.abort();
  current = null;
  $("app").hidden = true;
  $("token-form").hidden = false;
  if (message) showError(message);
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const options = { method, headers: { Authorization: `Bearer ${token}` } };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  if (response.status === 401) {
    askForToken("The server refused the token; give the one `lathe serve` printed.");
    throw new ApiError(401, "The server refused the token.");
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data.error || `HTTP ${response.status}`);
  return data;
}

const sessionPath = (id, rest = "") => `/v1/sessions/${encodeURIComponent(id)}${rest}`;

// ---- the session list

async function refreshSessions() {
  const asked = performance.now();
  const data = await api("GET", "/v1/sessions");
  sessions = data.sessions;
  showSessions();
  $("problems").replaceChildren(...data.problems.map((problem) => el("li", {}, problem)));
  showSessionHead();
  // Served again (resumed after a delete): follow it again, as a click would.
  if (current?.stale && sessions.some((s) => s.id === current.id)) select(current.id);
  checkQueue(current, asked);
}

// Rows are kept and updated in place, keyed by session id: rebuilt at every refresh, a
// refresh between a press and its release lost the click, and keyboard focus fell to
// the page body.
function showSessions() {
  const list = $("session-list");
  const rows = new Map([...list.children].map((row) => [row.dataset.sessionId, row]));
  sessions.forEach((session, index) => {
    const row = rows.get(session.id) ?? sessionRow(session.id);
    rows.delete(session.id);
    fillRow(row, session);
    if (list.children[index] !== row) list.insertBefore(row, list.children[index] ?? null);
  });
  for (const gone of rows.values()) gone.remove();
}

function sessionRow(id) {
  const row = el(
    "tr",
    { testid: "session-row", "data-session-id": id, onclick: () => select(id) },
    el("td", {}, el("button", { type: "button", class: "link" }, id)),
    // <bdi>: the cell is right-to-left so that a long path loses its start, not its end
    el("td", { class: "workspace" }, el("bdi")),
    el("td", {}, el("span", { class: "badge" })),
    el("td", { testid: "session-cost" }),
  );
  row.classList.toggle("selected", id === current?.id);
  return row;
}

function fillRow(row, session) {
  const [, workspace, status, cost] = row.children;
  workspace.title = session.workspace;
  workspace.firstChild.textContent = session.workspace;
  status.firstChild.textContent = session.status;
  status.firstChild.dataset.status = session.status;
  cost.textContent = formatCost(session.cost_usd, session.usage.total_tokens);
}

function showSessionHead() {
  if (!current) return;
  const session = sessions?.find((s) => s.id === current.id);
  $("session-title").textContent = session ? `${session.id} · ${session.workspace}` : current.id;
  const status = session ? session.status : sessions ? "not served" : "";
  $("session-status").textContent = status;
  $("session-status").dataset.status = status;
}

async function poll() {
  if (polling) return; // one loop, even when the token is given again
  polling = true;
  let failing = false;
  while (token) {
    try {
      await refreshSessions();
      // One no longer served has no approvals to ask for (its status says "not served";
      // asking showed its 404 as an error at every poll).
      if (current && sessions.some((s) => s.id === current.id)) await refreshPending(current);
      if (failing) clearError();
      failing = false;
    } catch (error) {
      if (token) {
        failing = true;
        showError(error instanceof ApiError ? error.message : `Cannot reach lathe serve: ${error.message}`);
      }
    }
    await sleep(POLL_MS);
  }
  polling = false;
}

function refreshSoon(view) {
  if (refreshTimer) return; // a burst of events (a replay) makes one request
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    Promise.all([refreshSessions(), refreshPending(view)]).catch(() => {}); // the poll reports
  }, 100);
}

function select(id) {
  if (current?.id === id && !current.stale) return; // a stale one (no longer followed) restarts
  current?.controller.abort();
  const view = { id, controller: new AbortController(), bubble: null, tools: new Map(),
    approvals: new Map(), lastId: 0, runs: [], history: null, inbox: [], drawnAt: -Infinity };
  current = view;
  history.replaceState(null, "", `#session=${encodeURIComponent(id)}`);
  $("nothing-selected").hidden = true;
  $("session-view").hidden = false;
  $("transcript").replaceChildren();
  $("pending-list").replaceChildren();
  $("pending").hidden = true;
  showNote(view);
  for (const row of $("session-list").children) {
    row.classList.toggle("selected", row.dataset.sessionId === id);
  }
  showSessionHead();
  follow(view);
  loadHistory(view).catch(() => {}); // without it, the journal alone is shown
  refreshPending(view).catch((error) => showError(error.message));
}

// ---- the note under the message box, and this page's queued messages

// What became of the last message or abort (view.said), and of this page's queued
// messages (view.queueSaid).
function showNote(view) {
  if (view !== current) return;
  $("message-note").textContent = [view.said, view.queueSaid].filter(Boolean).join(" ");
}

// Whether a run's task holds a queued message: the server sends those waiting in one
// run, joined by blank lines.
function carries(task, text) {
  const [all, one] = [task.trimEnd(), text.trimEnd()];
  return all === one || all.startsWith(`${one}\n\n`) || all.endsWith(`\n\n${one}`) ||
    all.includes(`\n\n${one}\n\n`);
}

// The session says none is queued, in a list asked for after ours were, and every event
// up to then is drawn, none a run of ours: they went without running. An abort drops
// them; a stopping server keeps them in the conversation for the next run (GET
// .../transcript says which). Dropped, they go back in the box, so nothing typed is lost.
async function checkQueue(view, asked) {
  const mine = view && waiting.get(view.id);
  const session = mine && sessions.find((s) => s.id === view.id);
  if (!session) return;
  if (session.queued_messages > 0) {
    view.queueSaid = QUEUED;
    return showNote(view);
  }
  if (view.lastId < session.last_event_id || mine.some((message) => message.at > asked)) return;
  waiting.delete(view.id);
  const texts = mine.map((message) => message.text);
  let kept = false;
  try {
    const { blocks } = await api("GET", sessionPath(view.id, "/transcript"));
    const last = blocks.filter((block) => block.kind === "user").at(-1);
    kept = Boolean(last) && texts.every((queued) => carries(last.text, queued));
  } catch {
    // not known: they go back in the box
  }
  if (view !== current) { // said when it is shown again
    waiting.set(view.id, mine);
    return;
  }
  if (kept) {
    view.queueSaid = "Your queued message did not run before the session stopped: it is kept" +
      " in the conversation, and the model reads it when the session runs again.";
  } else {
    const box = $("message-form").elements.text;
    box.value = [...texts, box.value].filter((part) => part.trim()).join("\n\n");
    view.queueSaid = "Your queued message did not run: it is back in the box.";
  }
  showNote(view);
}

// ---- the event stream: fetch + SSE (EventSource cannot send the token), resumed with
// Last-Event-ID so that nothing is missed or shown twice

// Yields {id, data} per event of a text/event-stream body; `onData` is called per chunk.
async function* sseEvents(body, onData) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let id = null;
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onData();
      buffer += value;
      // A "\r" at the very end may be half of a "\r\n": it waits for the next chunk.
      const lines = buffer.split(/\r\n|\r(?!$)|\n/);
      buffer = lines.pop();
      for (const line of lines) {
        if (line === "") {
          if (id !== null && data.length) yield { id: Number(id), data: data.join("\n") };
          id = null;
          data = [];
        } else if (!line.startsWith(":")) { // ":" lines are pings
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "id") id = value;
          else if (field === "data") data.push(value);
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

async function follow(view) {
  const selection = view.controller.signal;
  let lastId = 0; // the last received; view.lastId is the last drawn
  let failures = 0;
  while (!selection.aborted) {
    const connection = new AbortController();
    const drop = () => connection.abort();
    selection.addEventListener("abort", drop);
    let watchdog = null;
    const rearm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(drop, SILENT_STREAM_MS);
    };
    try {
      const headers = { Authorization: `Bearer ${token}` };
      if (lastId) headers["Last-Event-ID"] = String(lastId);
      rearm();
      const response = await fetch(sessionPath(view.id, "/events"), { headers, signal: connection.signal });
      if (response.status === 401) return askForToken("The server refused the token.");
      if (response.status === 404) {
        view.stale = true; // selecting it again, or its coming back, follows it anew
        return note(view, "This session is no longer served.", "warning");
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      for await (const event of sseEvents(response.body, rearm)) {
        if (event.id <= lastId) continue; // already had
        lastId = event.id;
        failures = 0;
        receive(view, event);
      }
    } catch {
      // a dropped or silent stream: pick up after lastId below
    } finally {
      clearTimeout(watchdog);
      selection.removeEventListener("abort", drop);
    }
    if (selection.aborted) return;
    await sleep(Math.min(MAX_RETRY_MS, 250 * 2 ** failures++));
  }
}

// ---- the earlier history: a session's journal begins when it is first served, so what
// came before (a fork's parent's conversation, a `lathe run` served later) is read from
// its transcript's blocks (GET .../transcript, session/transcript.py's transcript_blocks:
// kind user, lathe, assistant, tool or event, with head and text) and drawn above the
// journal's events.

async function loadHistory(view) {
  // The journal as it is now, then the transcript: what the transcript holds of the
  // journal is at most its runs up to `known`.
  const { last_event_id: known } = await api("GET", sessionPath(view.id));
  const { blocks } = await api("GET", sessionPath(view.id, "/transcript"));
  view.history = { known, blocks };
  drawHistory(view);
}

// Once the journal is read up to `known`: its runs are matched to the transcript's
// messages from the end (a run that failed before its message was recorded matches
// none), and what comes before the first one matched is drawn as earlier history.
function drawHistory(view) {
  const { history } = view;
  if (!history || history.drawn || view.lastId < history.known || view !== current) return;
  history.drawn = true;
  const { blocks } = history;
  let start = blocks.length;
  const tasks = view.runs.filter((run) => run.id <= history.known).map((run) => run.task);
  for (const task of tasks.reverse()) {
    for (let index = start - 1; index >= 0; index--) {
      if (blocks[index].text === task && ["user", "lathe"].includes(blocks[index].kind)) {
        start = index;
        break;
      }
    }
  }
  const earlier = blocks.slice(0, start);
  if (!earlier.some((block) => block.kind !== "event")) return;
  const log = $("transcript");
  const atBottom = isAtBottom(log);
  log.prepend(el(
    "section",
    { class: "history", testid: "earlier-history" },
    el("p", { class: "note" }, "Earlier in this session, from its record:"),
    ...earlier.map(historyBlock),
  ));
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function historyBlock({ kind, head, text }) {
  switch (kind) {
    case "user":
      return el("div", { class: "user", testid: "user-message" }, text);
    case "lathe":
      return el("div", { class: "lathe", testid: "lathe-message" }, text);
    case "assistant":
      return el("div", { class: "assistant", testid: "assistant-message" }, text);
    case "tool":
      return el(
        "details",
        { class: head.endsWith(" error") ? "tool failed" : "tool done", testid: "tool-result" },
        el("summary", {}, `← ${head}`),
        el("pre", { class: "output" }, text),
      );
    default:
      return el("p", { class: "note" }, head);
  }
}

// ---- the transcript, built from events

// Events are drawn in batches, at most one each DRAW_EVERY_MS, consecutive text (or
// thinking) fragments joined into one: drawn one by one as they came, a fragment a text
// node and the page laid out and painted every frame, a reload of a session of 40,000
// events kept the tab busy for about 16 s. A reader at the bottom of the transcript stays
// there: where the reader is, is read before a batch changes the transcript, and the
// scroll done once after it (read after each event, it cost a layout per event and a
// 4,000-line reply froze the tab for minutes). A page bug is reported, not taken for a
// dropped stream.
const DRAW_EVERY_MS = 100;
const FRAGMENTS = new Set(["text_delta", "thinking_delta"]);

function receive(view, event) {
  view.inbox.push(event);
  if (view.inbox.length > 1) return; // a batch is waiting
  const wait = Math.max(0, view.drawnAt + DRAW_EVERY_MS - performance.now());
  setTimeout(() => drawInbox(view), wait);
}

// Whether the reader is at the end of `log` (then what is drawn keeps it there).
function isAtBottom(log) {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 60;
}
function drawInbox(view) {
  const events = view.inbox.splice(0);
  if (view !== current) return;
  view.drawnAt = performance.now();
  const log = $("transcript");
  const stick = isAtBottom(log);
  let joined = null; // the fragments since the last other event
  for (const { id, data } of events) {
    view.lastId = id;
    let event;
    try {
      event = JSON.parse(data);
    } catch (error) {
      reportError(error);
      continue;
    }
    if (FRAGMENTS.has(event.type) && joined?.type === event.type) {
      joined.text += event.text;
      continue;
    }
    if (joined) draw(view, joined);
    joined = FRAGMENTS.has(event.type) ? { ...event } : null;
    if (!joined) draw(view, event, id);
  }
  if (joined) draw(view, joined);
  drawHistory(view);
  if (stick) log.scrollTop = log.scrollHeight;
}

function draw(view, event, id) {
  try {
    if (event.type === "run_started") view.runs.push({ id, task: event.task.trimEnd() });
    DRAW[event.type]?.(view, event, id); // types this page does not know are skipped
    if (CHANGES_STATE.has(event.type)) refreshSoon(view);
  } catch (error) {
    reportError(error);
  }
}

const DRAW = {
  run_started(view, event, id) {
    closeBubble(view);
    view.said = "";
    const mine = waiting.get(view.id) ?? [];
    const left = mine.filter((message) => !(id > message.after && carries(event.task, message.text)));
    if (left.length < mine.length) { // ours runs now
      if (left.length) waiting.set(view.id, left);
      else waiting.delete(view.id);
      view.queueSaid = left.length ? QUEUED : "";
    }
    showNote(view);
    // A run an answer started while none went (the calls a restart left waiting for
    // their approvals) has lathe's words for its task ("Continue the task…").
    if (event.origin === "lathe") add(el("div", { class: "lathe", testid: "lathe-message" }, event.task));
    else add(el("div", { class: "user", testid: "user-message" }, event.task));
    view.running = true;
  },
  turn_started(view) {
    closeBubble(view);
  },
  text_delta(view, event) {
    appendText(bubble(view).text, event.text);
  },
  thinking_delta(view, event) {
    appendText(bubble(view).thinking, event.text);
  },
  assistant_reply(view, event) {
    if (event.message.text) bubble(view).text.textContent = event.message.text; // the one that counts
    closeBubble(view);
  },
  retry(view, event) {
    // The reply starts over, below the note: the cut attempt's words and reasoning go.
    if (view.bubble) view.bubble.text.parentElement.remove();
    view.bubble = null;
    const failed = `Attempt ${event.attempt} of ${event.max_attempts} failed (${event.error})`;
    note(view, `${failed}; retrying.`, "warning");
  },
  tool_started: toolStarted,
  tool_finished: toolFinished,
  approval_requested(view, event) {
    const card = approvalCard(view, { ...event, id: event.approval_id });
    const tool = view.tools.get(event.call_id);
    if (tool) tool.block.append(card); // in its call's block, between the call and its result
    else add(card);
    view.approvals.set(event.approval_id, card);
  },
  approval_resolved(view, event) {
    approvalResolved(view, event);
  },
  verify_finished(view, event) {
    const verdict = event.passed ? "passed" : "failed";
    add(el(
      "details",
      { class: "verify", testid: "verify-result" },
      el("summary", {}, el("span", { class: "badge", "data-status": verdict }, verdict),
        ` ${event.baseline ? "baseline check" : "verify"}: ${event.command}`),
      el("pre", { class: "output" }, event.output_tail),
    ));
  },
  run_finished(view, event) {
    closeBubble(view);
    view.running = false;
    const tokens = Object.values(event.usage).reduce((sum, count) => sum + count, 0);
    add(el(
      "div",
      { class: "run-end" },
      el("span", { class: "badge", testid: "run-status", "data-status": event.status }, event.status),
      ` ${plural(event.turns, "turn")} · ${formatCost(event.cost_usd, tokens)}`,
      event.reason ? el("p", { class: "reason" }, event.reason) : null,
    ));
  },
  notice(view, event) {
    note(view, event.message, event.level);
  },
  queued(view, event) {
    const what = event.what === "command" ? "command" : "model call";
    note(view, `Waiting for a free ${what} slot (${event.waiting} waiting, ${event.limit} at once).`);
  },
  compaction(view, event) {
    note(view, `Older conversation summarized (${event.tokens_before} → ${event.tokens_after} tokens).`);
  },
  stall_nudge(view, event) {
    note(view, `The model repeated ${event.tool} ${plural(event.repeats, "time")}; it was told.`, "warning");
  },
  attempt_started(view, event) {
    note(view, `Attempt ${event.attempt} of ${event.attempts}; the last ended ${event.previous_status}.`);
  },
  child_event(view, event) {
    const inner = event.event;
    const who = event.description || `subagent ${event.child_id}`;
    if (inner.type === "tool_started") note(view, `↳ ${who}: ${inner.name} ${inner.summary}`);
    else if (inner.type === "run_finished") note(view, `↳ ${who}: ${inner.status}`);
  },
};

function add(node) {
  $("transcript").append(node);
  return node;
}

function note(view, text, level = "info") {
  if (view === current) add(el("p", { class: `note ${level}`, testid: "note" }, text));
}

function bubble(view) {
  if (!view.bubble) {
    const thinking = el("div", { class: "thinking" });
    const text = el("div", { class: "text" });
    add(el("div", { class: "assistant", testid: "assistant-message" }, thinking, text));
    view.bubble = { thinking, text };
  }
  return view.bubble;
}

// A reply being streamed grows a block of whole lines at a time, each block never
// changed again, so a draw lays out only the new lines and the one being written: in one
// text node, every draw laid out the whole reply again. A finished reply is one text
// again, so that it copies as written (each block's end was read as one more newline).
function appendText(box, text) {
  let tail = box.lastChild;
  if (tail?.nodeType !== Node.TEXT_NODE) tail = box.appendChild(document.createTextNode(""));
  const all = tail.data + text;
  const cut = all.lastIndexOf("\n") + 1;
  if (cut) box.insertBefore(el("div", {}, all.slice(0, cut)), tail);
  tail.data = all.slice(cut);
}

function closeBubble(view) {
  for (const box of view.bubble ? [view.bubble.thinking, view.bubble.text] : []) {
    if (box.childNodes.length > 1) box.textContent = box.textContent;
  }
  view.bubble = null;
}

function toolStarted(view, event) {
  // A call a restart left waiting for its approval starts again with its id: its block
  // (with the approval) goes on.
  if (view.tools.has(event.call_id)) return;
  const result = el("span", { class: "result" });
  const details = el(
    "details",
    {},
    el("summary", { testid: "tool-summary" }, el("b", {}, event.name), " ", event.summary, result),
    el("pre", { class: "arguments" }, pretty(event.arguments)),
  );
  const block = add(el("div", { class: "tool running", testid: "tool" }, details));
  view.tools.set(event.call_id, { block, details, result });
}

function toolFinished(view, event) {
  if (!view.tools.has(event.call_id)) toolStarted(view, { ...event, arguments: {}, summary: "" });
  const { block, details, result } = view.tools.get(event.call_id);
  block.classList.replace("running", event.is_error ? "failed" : "done");
  result.textContent = ` → ${event.summary}`;
  if (event.output) details.append(el("pre", { class: "output" }, event.output));
  if (event.details?.diff) block.append(diffView(event.details.diff, "diff"));
}

function diffView(text, testid) {
  const lines = text.replace(/\n$/, "").split("\n");
  const spans = lines.map((line) => el("span", { class: diffClass(line) }, `${line}\n`));
  return el("pre", { class: "diff", testid }, ...spans);
}

function diffClass(line) {
  if (line.startsWith("+++") || line.startsWith("---")) return "meta";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "context";
}

const prefixLines = (prefix, text) => text.split("\n").map((line) => prefix + line).join("\n");

// The gate's preview is the command or the diff, but for some edits only the path: then
// the call's own old_string/new_string (or a write's content) show what would change.
function approvalPreview({ preview = "", arguments: args = {} }) {
  if (preview.includes("\n") && /^(---|\+\+\+|@@)/m.test(preview)) {
    return diffView(preview, "approval-diff");
  }
  const parts = [];
  if (preview) parts.push(el("pre", { class: "command", testid: "approval-preview" }, preview));
  if (typeof args.old_string === "string" || typeof args.new_string === "string") {
    const change = [prefixLines("-", args.old_string ?? ""), prefixLines("+", args.new_string ?? "")];
    parts.push(diffView(change.join("\n"), "approval-diff"));
  } else if (typeof args.content === "string") {
    parts.push(diffView(prefixLines("+", args.content), "approval-diff"));
  } else if (!preview) {
    parts.push(el("pre", { class: "arguments" }, pretty(args)));
  }
  return el("div", { class: "preview" }, ...parts);
}

// A pending approval's card, in the transcript and in the pending panel alike.
function approvalCard(view, approval) {
  const reason = el("input", { class: "reason", placeholder: "why not (for Deny)", testid: "deny-reason" });
  const buttons = el("div", { class: "buttons" });
  const enable = (on) => {
    for (const button of buttons.querySelectorAll("button")) button.disabled = !on;
  };
  const answer = (choice) => guarded(async () => {
    enable(false); // until approval_resolved replaces them, or the answer fails
    try {
      const body = { choice, reason: choice === "deny" ? reason.value.trim() : "" };
      await api("POST", sessionPath(view.id, `/approvals/${encodeURIComponent(approval.id)}`), body);
    } catch (error) {
      enable(true);
      throw error;
    }
    await refreshPending(view);
  });
  const choiceButton = (label, choice, testid, props = {}) =>
    el("button", { type: "button", testid, onclick: () => answer(choice), ...props }, label);
  buttons.append(
    choiceButton("Approve once", "once", "approve-once", { class: "approve" }),
    choiceButton("Always", "always", "approve-always", { title: `allow ${approval.key} from now on` }),
    reason,
    choiceButton("Deny", "deny", "deny", { class: "deny" }),
  );
  const wait = approval.timeout_s ? ` (denied if nobody answers within ${approval.timeout_s} s)` : "";
  return el(
    "div",
    { class: "approval", testid: "approval-card", "data-approval-id": approval.id },
    el("p", {}, el("b", {}, approval.tool), ` needs approval: ${approval.reason}${wait}`),
    approvalPreview(approval),
    buttons,
  );
}

function approvalResolved(view, event) {
  const card = view.approvals.get(event.approval_id);
  if (!card) return;
  const answers = { once: "Approved once", always: "Approved for the session", deny: "Denied" };
  let text = answers[event.choice] ?? event.choice;
  if (event.reason) text += `: ${event.reason}`;
  if (event.by === "timeout") text += " (nobody answered in time)";
  card.classList.add("resolved");
  card.querySelector(".buttons").replaceWith(el("p", { class: "answer", testid: "approval-answer" }, text));
}

async function refreshPending(view) {
  const { approvals } = await api("GET", sessionPath(view.id, "/approvals"));
  if (view !== current) return;
  // Rebuilt only when the set changes, so that a half-typed denial reason survives the poll.
  const shown = [...$("pending-list").children].map((card) => card.dataset.approvalId);
  if (shown.join(" ") === approvals.map((approval) => approval.id).join(" ")) return;
  $("pending-list").replaceChildren(...approvals.map((approval) => approvalCard(view, approval)));
  $("pending").hidden = approvals.length === 0;
}

// ---- forms

function wireForms() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, event.target.elements.token.value.trim());
    event.target.reset();
    start();
  });

  $("new-session").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const body = {}; // fields left empty come from the workspace's config
      for (const [name, value] of new FormData(event.target)) {
        if (value.trim()) body[name] = value.trim();
      }
      const created = await api("POST", "/v1/sessions", body);
      await refreshSessions();
      select(created.id);
    });
  });

  const messageForm = $("message-form");
  // Disabled while a post is out: a second click then had sent the task twice.
  const send = messageForm.querySelector("button[type=submit]");
  messageForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const view = current;
    const text = messageForm.elements.text.value;
    if (!view || !text.trim() || send.disabled) return;
    send.disabled = true;
    guarded(async () => {
      try {
        const { queued } = await api("POST", sessionPath(view.id, "/messages"), { text });
        messageForm.reset();
        if (queued) {
          const mine = waiting.get(view.id) ?? [];
          waiting.set(view.id, [...mine, { text, after: view.lastId, at: performance.now() }]);
          view.queueSaid = QUEUED;
        }
        view.said = "";
        showNote(view);
      } finally {
        send.disabled = false;
      }
    });
  });
  messageForm.elements.text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) messageForm.requestSubmit();
  });

  $("abort").addEventListener("click", () => {
    const view = current;
    if (!view) return;
    guarded(async () => {
      const { aborted } = await api("POST", sessionPath(view.id, "/abort"));
      view.said = aborted ? "Stopped the run." : "No run was going.";
      showNote(view);
      refreshSoon(view); // it dropped the messages queued: checkQueue says so
    });
  });
}

function start() {
  token = takeToken();
  if (!token) return askForToken();
  clearError();
  $("token-form").hidden = true;
  $("app").hidden = false;
  poll();
  showWantedSession();
}

// The session the address names (`select` leaves one already shown alone): at the
// start, and when the address of an open tab changes (edited, or a link followed).
function showWantedSession() {
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (token && wanted) select(wanted);
}
window.addEventListener("hashchange", showWantedSession);

wireForms();
start();
