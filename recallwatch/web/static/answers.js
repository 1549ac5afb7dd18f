// The answers page: y/n answer the highlighted question about the answer shown (faithful,
// relevant, and correct when a reference or facts say what is right); once each is answered the
// labels are saved. u (or Backspace) takes back the last answer given, or, when none is given to
// the answer shown, the last saved labels. A label names the answer on screen
// (labelling.js: one action at a time, keys ignored until what is shown has settled).
(function () {
  "use strict";
  const page = Labelling.page("answers-data");
  const data = page.data;
  const items = data.items;
  const $ = page.$;
  const text = page.text;
  let labelled = data.state.labelled;
  let draft = [];  // [question, value] given so far to the answer shown
  let draftFor = null;

  function current() {
    return items.findIndex((item) => !(item.id in labelled));
  }

  function asked(item) {
    return item.has_truth ? ["faithful", "relevant", "correct"] : ["faithful", "relevant"];
  }

  function given(name) {
    const found = draft.find(([q]) => q === name);
    return found ? found[1] : undefined;
  }

  function next(item) {
    return asked(item).find((q) => given(q) === undefined);
  }

  function passage(value) {
    const pre = document.createElement("pre");
    pre.className = "passage";
    text(pre, value);
    return pre;
  }

  function showTruth(item) {
    $("truth").hidden = !item.has_truth;
    const box = $("truth-items");
    box.replaceChildren();
    if (item.reference) {
      text($("truth-kind"), "Reference answer");
      box.append(passage(item.reference));
    } else if (item.facts) {
      text($("truth-kind"), "Facts it must state");
      for (const fact of item.facts) {
        box.append(passage(fact));
      }
    }
  }

  function showQuestions(item) {
    const ask = next(item);
    for (const row of document.querySelectorAll(".ask")) {
      const name = row.dataset.question;
      row.hidden = !asked(item).includes(name);
      row.classList.toggle("current", name === ask);
      const value = given(name);
      text(row.querySelector(".given"), value === undefined ? "" : value ? "— yes" : "— no");
    }
  }

  page.render = function () {
    page.progress(Object.keys(labelled).length, items.length, "labelled");
    const i = current();
    const id = i < 0 ? null : items[i].id;
    if (id !== draftFor) {
      draft = [];
      draftFor = id;
    }
    page.showing(i + ":" + draft.length);
    $("item").hidden = i < 0;
    $("finished").hidden = i >= 0;
    if (i < 0) {
      return;
    }
    const item = items[i];
    text($("position"), "answer " + (i + 1) + " of " + items.length);
    text($("answer-id"), item.id);
    text($("question"), item.question);
    text($("answer"), item.answer);
    const list = $("contexts");
    list.replaceChildren();
    for (const context of item.contexts) {
      const li = document.createElement("li");
      li.append(passage(context));
      list.append(li);
    }
    showTruth(item);
    showQuestions(item);
  };

  function words(body) {
    return ["faithful", "relevant", "correct"].filter((q) => body[q] !== null)
      .map((q) => q + " " + (body[q] ? "yes" : "no")).join(", ");
  }

  function save(item) {
    const body = { id: item.id, faithful: given("faithful"), relevant: given("relevant"),
                   correct: item.has_truth ? given("correct") : null };
    draft = [];
    page.enqueue(async () => {
      const saved = await page.post("label", body);
      labelled = saved.labelled;
      page.say("Saved " + item.id + ": " + words(body));
    });
  }

  function answer(value, name) {
    const i = current();
    if (page.busy() || i < 0 || page.settling()) {
      return;
    }
    const item = items[i];
    const question = name || next(item);
    if (!question || !asked(item).includes(question)) {
      return;
    }
    draft = draft.filter(([q]) => q !== question).concat([[question, value]]);
    if (next(item) === undefined) {
      save(item);
    } else {
      page.render();
    }
  }

  function undo() {
    if (page.busy()) {
      return;
    }
    if (draft.length) {
      draft = draft.slice(0, -1);
      page.render();
      return;
    }
    page.enqueue(async () => {
      const out = await page.post("undo");
      labelled = out.labelled;
      page.say(out.undone ? "Took back the labels of " + out.undone : "Nothing to take back");
    });
  }

  document.addEventListener("keydown", (event) => {
    if (!page.plainKey(event)) {
      return;
    }
    if (event.key === "y" || event.key === "n") {
      event.preventDefault();
      answer(event.key === "y");
    } else if (event.key === "u" || event.key === "Backspace") {
      event.preventDefault();
      undo();
    }
  });
  for (const row of document.querySelectorAll(".ask")) {
    for (const button of row.querySelectorAll("button[data-value]")) {
      button.addEventListener("click",
                              () => answer(button.dataset.value === "true", row.dataset.question));
    }
  }
  $("undo").addEventListener("click", undo);
  page.render();
})();
