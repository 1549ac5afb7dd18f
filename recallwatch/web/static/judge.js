// The judging page: keys 0-3 grade the pair shown, u (or Backspace) takes back the last grade.
// A grade names the pair on screen when the key was pressed (labelling.js: one action at a
// time, keys ignored until the next pair has settled).
(function () {
  "use strict";
  const page = Labelling.page("judge-data");
  const data = page.data;
  const items = data.items;
  const $ = page.$;
  const text = page.text;
  let judged = data.state.judged;
  const key = (item) => item.query_id + "\u0000" + item.id;

  function current() {
    return items.findIndex((item) => !(key(item) in judged));
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

  page.render = function () {
    page.progress(Object.keys(judged).length, items.length, "judged");
    const i = current();
    page.showing(String(i));
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
  };

  function grade(value) {
    const i = current();
    if (page.busy() || i < 0 || page.settling()) {
      return;
    }
    const item = items[i];
    page.enqueue(async () => {
      const saved = await page.post("grade", { query_id: item.query_id, id: item.id,
                                               grade: value });
      judged = saved.judged;
      page.say("Saved " + item.query_id + " / " + item.id + ": " + value + " (" +
               data.grades[value] + ")");
    });
  }

  function undo() {
    if (page.busy()) {
      return;
    }
    page.enqueue(async () => {
      const out = await page.post("undo");
      judged = out.judged;
      page.say(out.undone ? "Took back the grade of " + out.undone.query_id + " / " +
                            out.undone.id : "Nothing to take back");
    });
  }

  document.addEventListener("keydown", (event) => {
    if (!page.plainKey(event)) {
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
  page.render();
})();
