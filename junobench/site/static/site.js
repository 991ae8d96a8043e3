// junobench site: filters, sorting and views. No data from a notebook is ever run or
// inserted as HTML here: the script only shows, hides and reorders what the page holds.
"use strict";

(function () {
  function params() {
    var out = {};
    var hash = window.location.hash.replace(/^#/, "");
    if (hash.indexOf("=") < 0) { return out; }
    hash.split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) {
        try {
          out[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1).replace(/\+/g, " "));
        } catch (e) { /* a malformed hash filters nothing */ }
      }
    });
    return out;
  }

  function setHash(state) {
    var parts = [];
    Object.keys(state).forEach(function (key) {
      if (state[key]) { parts.push(encodeURIComponent(key) + "=" + encodeURIComponent(state[key])); }
    });
    var hash = parts.length ? "#" + parts.join("&") : "";
    if (hash !== window.location.hash) {
      history.replaceState(null, "", hash || window.location.pathname + window.location.search);
    }
  }

  // ------------------------------------------------------------------ filterable tables

  function setupFilters() {
    var table = document.querySelector("table.filterable");
    if (!table) { return; }
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var selects = Array.prototype.slice.call(document.querySelectorAll("#filters select[data-field]"));
    var text = document.getElementById("filter-text");
    var shown = document.getElementById("shown");
    var active = document.getElementById("active-filter");
    var state = params();

    function apply() {
      var query = (text && text.value || "").trim().toLowerCase();
      var count = 0;
      rows.forEach(function (row) {
        var ok = true;
        selects.forEach(function (select) {
          if (select.value && row.getAttribute("data-" + select.getAttribute("data-field")) !== select.value) { ok = false; }
        });
        if (ok && state.col && state.outcome) {
          var cell = row.querySelector('td[data-col="' + cssEscape(state.col) + '"]');
          var marks = cell ? cell.querySelectorAll("[data-outcome]") : [];
          ok = Array.prototype.some.call(marks, function (m) { return m.getAttribute("data-outcome") === state.outcome; });
        }
        if (ok && query) { ok = row.textContent.toLowerCase().indexOf(query) >= 0; }
        row.hidden = !ok;
        if (ok) { count += 1; }
      });
      if (shown) { shown.textContent = String(count); }
      if (active) {
        active.textContent = state.col && state.outcome ? "showing " + state.outcome + " of " + columnName(state.col) : "";
      }
      updateCharts(rows);
      var next = {};
      selects.forEach(function (select) { next[select.getAttribute("data-field")] = select.value; });
      if (state.col && state.outcome) { next.col = state.col; next.outcome = state.outcome; }
      if (query) { next.q = query; }
      setHash(next);
    }

    function columnName(slug) {
      var cell = table.querySelector('td[data-col="' + cssEscape(slug) + '"] a');
      return cell ? cell.title.replace(/ on .*$/, "") : slug;
    }

    function load() {
      state = params();
      selects.forEach(function (select) {
        var wanted = state[select.getAttribute("data-field")] || "";
        var known = Array.prototype.some.call(select.options, function (o) { return o.value === wanted; });
        select.value = known ? wanted : "";
      });
      if (text) { text.value = state.q || ""; }
      apply();
    }

    selects.forEach(function (select) { select.addEventListener("change", apply); });
    if (text) { text.addEventListener("input", apply); }
    var reset = document.getElementById("filter-reset");
    if (reset) {
      reset.addEventListener("click", function (event) {
        event.preventDefault();
        state = {};
        selects.forEach(function (select) { select.value = ""; });
        if (text) { text.value = ""; }
        apply();
      });
    }
    var form = document.getElementById("filters");
    if (form) { form.addEventListener("submit", function (event) { event.preventDefault(); }); }
    Array.prototype.forEach.call(document.querySelectorAll("a.bar"), function (bar) {
      bar.addEventListener("click", function (event) {
        event.preventDefault();
        var select = document.querySelector('#filters select[data-field="' + cssEscape(bar.getAttribute("data-field")) + '"]');
        if (select) {
          var value = bar.getAttribute("data-value");
          select.value = select.value === value ? "" : value;
          apply();
        }
      });
    });
    window.addEventListener("hashchange", function () {
      var now = params();
      if (JSON.stringify(now) !== JSON.stringify(currentState())) { load(); }
    });

    function currentState() {
      var out = {};
      selects.forEach(function (select) { if (select.value) { out[select.getAttribute("data-field")] = select.value; } });
      if (state.col && state.outcome) { out.col = state.col; out.outcome = state.outcome; }
      if (text && text.value.trim()) { out.q = text.value.trim().toLowerCase(); }
      return out;
    }
    load();
  }

  function updateCharts(rows) {
    Array.prototype.forEach.call(document.querySelectorAll("figure.chart"), function (chart) {
      var field = chart.getAttribute("data-field");
      var counts = {};
      var most = 0;
      rows.forEach(function (row) {
        if (!row.hidden) {
          var value = row.getAttribute("data-" + field);
          counts[value] = (counts[value] || 0) + 1;
        }
      });
      Object.keys(counts).forEach(function (k) { most = Math.max(most, counts[k]); });
      Array.prototype.forEach.call(chart.querySelectorAll("a.bar"), function (bar) {
        var n = counts[bar.getAttribute("data-value")] || 0;
        var fill = bar.querySelector(".bar-fill");
        var label = bar.querySelector(".bar-count");
        if (fill) { fill.style.width = (most ? (100 * n / most).toFixed(1) : "0") + "%"; }
        if (label) {
          var total = label.getAttribute("data-total");
          label.textContent = String(n) === total ? total : n + " / " + total;
        }
        var select = document.querySelector('#filters select[data-field="' + cssEscape(field) + '"]');
        bar.classList.toggle("selected", !!select && select.value === bar.getAttribute("data-value"));
      });
    });
  }

  function cssEscape(value) {
    return window.CSS && CSS.escape ? CSS.escape(value) : String(value).replace(/["\\]/g, "\\$&");
  }

  // ------------------------------------------------------------------ sortable tables

  function setupSorting() {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
      var headers = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [];
      Array.prototype.forEach.call(table.tHead ? table.tHead.querySelectorAll("th[data-sort]") : [], function (th) {
        var column = Array.prototype.indexOf.call(th.parentNode.cells, th);
        if (th.parentNode !== table.tHead.rows[0] && headers.length) { column = Array.prototype.indexOf.call(headers, th); }
        th.tabIndex = 0;
        th.classList.add("sort");
        function sort() {
          var numeric = th.getAttribute("data-sort") === "number";
          var down = th.getAttribute("aria-sort") !== "ascending";
          Array.prototype.forEach.call(table.tHead.querySelectorAll("th"), function (h) { h.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", down ? "ascending" : "descending");
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows);
          rows.sort(function (a, b) {
            var x = a.cells[column] ? a.cells[column].textContent.trim() : "";
            var y = b.cells[column] ? b.cells[column].textContent.trim() : "";
            var result;
            if (numeric) {
              result = (parseFloat(x) || -1) - (parseFloat(y) || -1);
            } else {
              result = x.localeCompare(y, undefined, {numeric: true, sensitivity: "base"});
            }
            return down ? result : -result;
          });
          rows.forEach(function (row) { body.appendChild(row); });
        }
        th.addEventListener("click", sort);
        th.addEventListener("keydown", function (event) { if (event.key === "Enter") { sort(); } });
      });
    });
  }

  // ------------------------------------------------------------------ case pages

  function setupCase() {
    var views = Array.prototype.slice.call(document.querySelectorAll("div.view[data-view]"));
    if (!views.length) { return; }
    var tabs = Array.prototype.slice.call(document.querySelectorAll(".view-switch a[data-view]"));
    function show(name) {
      views.forEach(function (view) { view.hidden = view.getAttribute("data-view") !== name; });
      tabs.forEach(function (tab) { tab.setAttribute("aria-selected", String(tab.getAttribute("data-view") === name)); });
    }
    function follow() {
      var id = window.location.hash.replace(/^#/, "");
      var target = null;
      try { target = id ? document.getElementById(decodeURIComponent(id)) : null; } catch (e) { target = null; }
      var holder = target ? target.closest("div.view[data-view]") : null;
      if (holder) {
        show(holder.getAttribute("data-view"));
        if (target.classList.contains("cell")) { target.classList.add("linked"); }
        target.scrollIntoView();
      } else if (!document.querySelector("div.view:not([hidden])") || views.every(function (v) { return !v.hidden; })) {
        show("runs");
      }
    }
    tabs.forEach(function (tab) {
      tab.addEventListener("click", function (event) {
        event.preventDefault();
        show(tab.getAttribute("data-view"));
      });
    });
    var only = document.getElementById("changes-only");
    if (only) {
      only.addEventListener("change", function () { document.body.classList.toggle("changes-only", only.checked); });
    }
    window.addEventListener("hashchange", follow);
    follow();
  }

  function start() {
    setupFilters();
    setupSorting();
    setupCase();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
