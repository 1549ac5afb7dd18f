// The judging page: keys 0-3 grade the pair shown, u (or Backspace) takes back the last grade.
// Every action is sent to the server in order, one at a time; the page shows what the server
// saved, nothing else. A grade names the pair on screen when the key was pressed, and keys are
// ignored until the server has answered and the next pair has been on screen for SETTLE_MS: a
// key pressed twice grades the pair the judge saw, never the next one.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("judge-data").textContent);
  const items = data.items;
  let judged = data.state.judged;
  let chain = Promise.resolve();
  let pending = 0;
  const SETTLE_MS = 250;
  let shown = -2;
  let readyAt = 0;
  const $ = (id) => document.getElementById(id);
  const key = (item) => item.query_id + "\u0000" + item.id;

  function current() {
    return items.findIndex((item) => !(key(item) in judged));
  }

  function text(el, value) {
    el.textContent = value === undefined || value === null ? "" : String(value);
  }

  function showMeta(meta) {
    const list = $("meta");
    list.replaceChildren();
    for (const [name, value] of Object.entries(meta || {})) {
      const dt = document.createElement("dt");
      const dd = document.createElement("dd");
      text(dt, name);
      text(dd, typeof value === "object" ? JSON.stringify(value) : value);
      list.append(dt, dd);
    }
  }

  function render() {
    const done = Object.keys(judged).length;
    text($("progress"), done + " / " + items.length + " judged");
    $("bar").value = done;
    $("bar").max = Math.max(items.length, 1);
    document.body.dataset.pending = String(pending);
    const i = current();
    if (i !== shown) {
      shown = i;
      readyAt = performance.now() + SETTLE_MS;
      document.body.dataset.ready = "0";
      setTimeout(() => {
        document.body.dataset.ready = shown === i ? "1" : document.body.dataset.ready;
      }, SETTLE_MS);
    }
    $("pair").hidden = i < 0;
    $("finished").hidden = i >= 0;
    if (i < 0) {
      return;
    }
    const item = items[i];
    text($("position"), "pair " + (i + 1) + " of " + items.length);
    text($("query-id"), item.query_id);
    text($("query"), item.query);
    text($("chunk-id"), item.id);
    text($("chunk"), item.text || "(no text: the pool had no store or corpus holding it)");
    showMeta(item.meta);
    const found = Object.entries(item.found_by || {}).map(([s, r]) => s + " #" + r);
    text($("found-by"), found.join(", "));
    const others = Object.entries(item.grades || {}).map(([j, g]) => j + ": " + g);
    text($("others"), others.length ? "grades given: " + others.join(", ") : "");
  }

  function say(message) {
    text($("status"), message);
  }

  async function post(path, body) {
    const headers = { "Content-Type": "application/json" };
    headers[data.header] = data.token;
    const response = await fetch(path, { method: "POST", headers: headers,
                                         body: JSON.stringify(body || {}) });
    const out = await response.json();
    if (!response.ok) {
      throw new Error(out.error || response.statusText);
    }
    return out;
  }

  function enqueue(action) {
    pending += 1;
    render();
    chain = chain.then(action).catch((err) => say("Not saved: " + err.message)).then(() => {
      pending -= 1;
      render();
    });
  }

  function grade(value) {
    const i = current();
    if (pending > 0 || i < 0 || performance.now() < readyAt) {
      return;
    }
    const item = items[i];
    enqueue(async () => {
      const saved = await post("grade", { query_id: item.query_id, id: item.id, grade: value });
      judged = saved.judged;
      say("Saved " + item.query_id + " / " + item.id + ": " + value + " (" +
          data.grades[value] + ")");
    });
  }

  function undo() {
    if (pending > 0) {
      return;
    }
    enqueue(async () => {
      const out = await post("undo");
      judged = out.judged;
      say(out.undone ? "Took back the grade of " + out.undone.query_id + " / " + out.undone.id
                     : "Nothing to take back");
    });
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) {
      return;
    }
    if (["0", "1", "2", "3"].includes(event.key)) {
      event.preventDefault();
      grade(Number(event.key));
    } else if (event.key === "u" || event.key === "Backspace") {
      event.preventDefault();
      undo();
    }
  });
  for (const button of document.querySelectorAll("button[data-grade]")) {
    button.addEventListener("click", () => grade(Number(button.dataset.grade)));
  }
  $("undo").addEventListener("click", undo);
  render();
})();
