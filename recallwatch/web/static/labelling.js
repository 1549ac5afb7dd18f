// What the labelling pages share (`recallwatch label serve`: the judging page's grades;
// `label answers`: the answers page's labels). Every action is sent to the server in order, one at a time; the page
// shows what the server saved, nothing else. Keys are ignored until the server has answered and
// what is on screen has been there for SETTLE_MS: a key pressed twice acts on what the person
// saw, never on the next item they have not seen yet. The body carries the state for tests and
// people alike: data-pending (requests not answered yet) and data-ready ("1" once settled).
const Labelling = (function () {
  "use strict";
  const SETTLE_MS = 250;

  function page(dataId) {
    const data = JSON.parse(document.getElementById(dataId).textContent);
    let chain = Promise.resolve();
    let pending = 0;
    let shown = null;
    let readyAt = 0;
    const api = {
      data: data,
      render: function () {},  // the page's own: draws what the server saved
      $: (id) => document.getElementById(id),
      text(el, value) {
        el.textContent = value === undefined || value === null ? "" : String(value);
      },
      say(message) {
        api.text(api.$("status"), message);
      },
      // the header's progress: "12 / 30 judged" and the bar
      progress(done, total, word) {
        api.text(api.$("progress"), done + " / " + total + " " + word);
        api.$("bar").value = done;
        api.$("bar").max = Math.max(total, 1);
      },
      // called by render with what is on screen now (any string): keys wait after it changes
      showing(what) {
        document.body.dataset.pending = String(pending);
        if (what === shown) {
          return;
        }
        shown = what;
        readyAt = performance.now() + SETTLE_MS;
        document.body.dataset.ready = "0";
        setTimeout(() => {
          document.body.dataset.ready = shown === what ? "1" : document.body.dataset.ready;
        }, SETTLE_MS);
      },
      busy() {
        return pending > 0;
      },
      settling() {
        return performance.now() < readyAt;
      },
      async post(path, body) {
        const headers = { "Content-Type": "application/json" };
        headers[data.header] = data.token;
        const response = await fetch(path, { method: "POST", headers: headers,
                                             body: JSON.stringify(body || {}) });
        const out = await response.json();
        if (!response.ok) {
          throw new Error(out.error || response.statusText);
        }
        return out;
      },
      enqueue(action) {
        pending += 1;
        api.render();
        chain = chain.then(action).catch((err) => api.say("Not saved: " + err.message))
          .then(() => {
            pending -= 1;
            api.render();
          });
      },
      // a key the page handles: no modifier, not a repeat
      plainKey(event) {
        return !(event.ctrlKey || event.metaKey || event.altKey || event.repeat);
      },
    };
    return api;
  }

  return { page: page };
})();
