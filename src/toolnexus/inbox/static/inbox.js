// toolnexus inbox: optional live updates. Every action works without this script.
(function () {
  "use strict";
  var base = document.body.getAttribute("data-base") || "/";

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time.expires[datetime]").forEach(function (el) {
      var left = (Date.parse(el.getAttribute("datetime")) - now) / 1000;
      if (isNaN(left)) { return; }
      if (left <= 0) {
        el.textContent = "expired";
        el.classList.add("expired");
        return;
      }
      var s = Math.floor(left), text;
      if (s < 60) { text = s + "s"; }
      else if (s < 3600) { text = Math.floor(s / 60) + "m " + (s % 60) + "s"; }
      else if (s < 86400) { text = Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m"; }
      else { text = Math.floor(s / 86400) + "d"; }
      el.textContent = "in " + text;
    });
  }

  function banner(text) {
    var main = document.getElementById("request");
    if (!main || document.getElementById("banner")) { return; }
    var p = document.createElement("p");
    p.id = "banner";
    p.setAttribute("role", "status");
    p.textContent = text;
    main.insertBefore(p, main.firstChild);
    document.querySelectorAll("#answer-form button, #cancel-form button").forEach(function (b) {
      b.disabled = true;
    });
  }

  // A request id as one path segment, as the server writes it (toolnexus.inbox.paths):
  // "." and ".." cannot be segments, so they are "~." and "~.."; any other "~" is escaped.
  function segment(id) {
    if (id === "." || id === "..") { return "~" + id; }
    return encodeURIComponent(id).replace(/~/g, "%7E");
  }

  function follow() {
    var section = document.getElementById("run-status");
    var main = document.getElementById("request");
    if (!section || !main || !section.hasAttribute("data-follow")) { return; }
    var id = main.getAttribute("data-request-id");
    var page = base + "requests/" + segment(id);
    var url = page + "/status";
    var timer = setInterval(function () {
      fetch(url, { headers: { accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (s) {
          if (s && s.status !== section.getAttribute("data-status")) {
            clearInterval(timer);
            // The request's own page, never a reload: a page that shows a refused post sits
            // at the form's action URL, and reloading it would post the form again.
            window.location.replace(page);
          }
        })
        .catch(function () {});
    }, 1500);
  }

  function live() {
    if (!window.EventSource) { return; }
    var source = new EventSource(base + "events");
    source.addEventListener("arrived", function () {
      var note = document.getElementById("live");
      if (note) { note.hidden = false; }
    });
    source.addEventListener("resolved", function (ev) {
      var data = JSON.parse(ev.data);
      document.querySelectorAll("tr[data-request-id]").forEach(function (row) {
        if (row.getAttribute("data-request-id") === data.id) { row.classList.add("resolved"); }
      });
      var main = document.getElementById("request");
      if (main && main.getAttribute("data-request-id") === data.id &&
          main.getAttribute("data-status") === "pending") {
        var who = data.answered_by ? " by " + data.answered_by : "";
        banner(data.status + who + ": this request was resolved elsewhere. Reload to see how.");
      }
    });
    // The event's counts are the whole store's; the list shows those of its own filters:
    // ask for them. On hello too: from hello on no arrival is missed, but one between the
    // page's rendering and hello has no event of its own, so the counts are read again then.
    source.addEventListener("counts", refreshCounts);
    source.addEventListener("hello", refreshCounts);
  }

  // -- counts that stay true --------------------------------------------------------------

  function refreshCounts() {
    var main = document.getElementById("pending");
    if (!main || !document.getElementById("kinds")) { return; }
    var query = main.getAttribute("data-query") || "";
    fetch(base + "counts" + (query ? "?" + query : ""),
          { headers: { accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (got) { if (got) { showCounts(got.counts || {}, got.total); } })
      .catch(function () {});
  }

  function kindTab(nav, kind) {
    var all = nav.querySelector('a[data-kind=""]');
    var a = document.createElement("a");
    var url = new URL(all ? all.href : window.location.href, window.location.href);
    url.searchParams.set("kind", kind);
    url.searchParams.delete("page");
    a.href = url.pathname + url.search;
    a.setAttribute("data-kind", kind);
    a.appendChild(document.createTextNode(kind + " "));
    var span = document.createElement("span");
    span.className = "count";
    a.appendChild(span);
    var after = null;  // the tabs stay in the order of their kinds, as the server writes them
    nav.querySelectorAll("a[data-kind]").forEach(function (tab) {
      var k = tab.getAttribute("data-kind");
      if (k && k < kind) { after = tab; }
    });
    var anchor = after || all;
    if (anchor) { anchor.insertAdjacentElement("afterend", a); } else { nav.appendChild(a); }
    nav.insertBefore(document.createTextNode(" "), a);
    var select = document.getElementById("filter-kind");
    if (select && !select.querySelector('option[value="' + CSS.escape(kind) + '"]')) {
      var option = document.createElement("option");
      option.value = kind;
      option.textContent = kind;
      select.appendChild(option);
    }
    return a;
  }

  function showCounts(counts, total) {
    var nav = document.getElementById("kinds"), sum = 0;
    Object.keys(counts).forEach(function (k) {
      sum += counts[k];
      if (!nav.querySelector('a[data-kind="' + CSS.escape(k) + '"]')) { kindTab(nav, k); }
    });
    nav.querySelectorAll("a[data-kind]").forEach(function (a) {
      var k = a.getAttribute("data-kind"), span = a.querySelector(".count");
      if (span) { span.textContent = String(k ? (counts[k] || 0) : sum); }
    });
    var shown = document.getElementById("total");
    if (shown && typeof total === "number") {
      if (total > Number(shown.textContent)) {  // more than the page shows: say so
        var note = document.getElementById("live");
        if (note) { note.hidden = false; }
      }
      shown.textContent = String(total);
    }
  }

  // -- a selection of rows ----------------------------------------------------------------

  function selection() {
    var form = document.getElementById("bulk");
    if (!form) { return; }
    var boxes = document.querySelectorAll('input.select[form="bulk"]');
    var all = document.getElementById("select-all");
    var said = document.getElementById("selected");
    var buttons = form.querySelectorAll("button");
    function update() {
      var n = 0;
      boxes.forEach(function (b) { if (b.checked) { n += 1; } });
      if (said) { said.textContent = n ? n + " selected" : ""; }
      buttons.forEach(function (b) { b.disabled = n === 0; });
      if (all) {
        all.checked = n > 0 && n === boxes.length;
        all.indeterminate = n > 0 && n < boxes.length;
      }
    }
    if (all) {
      all.hidden = false;
      all.addEventListener("change", function () {
        boxes.forEach(function (b) { b.checked = all.checked; });
        update();
      });
    }
    boxes.forEach(function (b) { b.addEventListener("change", update); });
    update();
  }

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    setInterval(tick, 1000);
    follow();
    selection();
    live();
  });
})();
