// recallwatch report: sortable tables, the per-query filter, drill-down links, JSON download.
// Plain DOM, no library. User strings are read from the page's text or from the JSON data
// island (script type="application/json"), never evaluated.
(function () {
  "use strict";

  function cellValue(cell) {
    var v = cell.getAttribute("data-v");
    if (v !== null && v !== "") { var n = Number(v); if (!isNaN(n)) { return n; } }
    return cell.textContent.trim().toLowerCase();
  }

  function makeSortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.setAttribute("tabindex", "0");
      var sort = function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
          var r;
          if (typeof x === "number" && typeof y === "number") { r = x - y; }
          else if (typeof x === "number") { r = -1; }       // numbers before blanks
          else if (typeof y === "number") { r = 1; }
          else { r = x < y ? -1 : x > y ? 1 : 0; }
          return asc ? r : -r;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
    });
  }

  function setupFilter(box) {
    var table = document.getElementById(box.getAttribute("data-table"));
    if (!table) { return; }
    var text = box.querySelector("input[type=search]");
    var domain = box.querySelector("select[name=domain]");
    var status = box.querySelector("select[name=status]");
    var gold = box.querySelector("input[name=gold]");
    var count = box.querySelector(".count");
    var apply = function () {
      var needle = (text && text.value || "").trim().toLowerCase();
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var ok = (!needle || row.textContent.toLowerCase().indexOf(needle) >= 0) &&
          (!domain || !domain.value || row.getAttribute("data-domain") === domain.value) &&
          (!status || !status.value || row.getAttribute("data-status") === status.value) &&
          (!gold || !gold.checked || row.getAttribute("data-gold") === "1");
        row.classList.toggle("hidden", !ok);
        if (ok) { shown += 1; }
      });
      if (count) { count.textContent = shown + " of " + table.tBodies[0].rows.length + " queries"; }
    };
    [text, domain, status, gold].forEach(function (el) {
      if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); }
    });
    apply();
  }

  // A link to #q-N opens that query's drill-down and scrolls to it.
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) { return; }
    var el = document.getElementById(id);
    if (el && el.tagName === "DETAILS") {
      el.open = true;
      el.classList.add("flash");
      el.scrollIntoView({ block: "start" });
    }
  }

  function setupDownload(button) {
    var island = document.getElementById(button.getAttribute("data-source"));
    if (!island) { button.remove(); return; }
    button.addEventListener("click", function () {
      var blob = new Blob([island.textContent], { type: "application/json" });
      var a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = button.getAttribute("data-filename") || "report.json";
      document.body.appendChild(a);
      a.click();
      a.remove();
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
    Array.prototype.forEach.call(document.querySelectorAll(".filters[data-table]"), setupFilter);
    Array.prototype.forEach.call(document.querySelectorAll("button.download"), setupDownload);
    window.addEventListener("hashchange", openTarget);
    openTarget();
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); }
  else { init(); }
})();
