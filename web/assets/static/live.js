// Live refresh for the ducc dashboard. Every 2 s it polls the page's JSON
// API (data-api on <main>); when the answer changed it fetches the page's
// server-rendered content (?fragment=1) and swaps it in. Durations and
// ages tick every second in between. Read-only: it only issues GETs.
"use strict";
(function () {
  var main = document.getElementById("content");
  var badge = document.getElementById("live");
  if (!main) { return; }
  var api = main.getAttribute("data-api");
  // Offset between the server clock (data-now) and this browser's.
  var skew = Number(main.getAttribute("data-now") || Date.now()) - Date.now();
  var last = null;

  function fmt(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    function p(n) { return (n < 10 ? "0" : "") + n; }
    if (s < 60) { return s + "s"; }
    if (s < 3600) { return Math.floor(s / 60) + "m" + p(s % 60) + "s"; }
    if (s < 86400) { return Math.floor(s / 3600) + "h" + p(Math.floor(s % 3600 / 60)) + "m"; }
    return Math.floor(s / 86400) + "d" + p(Math.floor(s % 86400 / 3600)) + "h";
  }

  function tick() {
    var now = Date.now() + skew;
    main.querySelectorAll("[data-since]").forEach(function (el) {
      var start = Number(el.getAttribute("data-since"));
      if (start > 0 && Number(el.getAttribute("data-until")) === 0) { el.textContent = fmt(now - start); }
    });
    main.querySelectorAll("[data-ago]").forEach(function (el) {
      var t = Number(el.getAttribute("data-ago"));
      if (t > 0) { el.textContent = fmt(now - t) + " ago"; }
    });
  }

  function stale(msg) {
    if (badge) { badge.textContent = msg; badge.className = "live stale"; }
  }
  function fresh() {
    if (badge) { badge.textContent = "live"; badge.className = "live"; }
  }

  function refresh() {
    var u = new URL(window.location.href);
    u.searchParams.set("fragment", "1");
    return fetch(u, { headers: { "Accept": "text/html" } }).then(function (r) {
      return r.text().then(function (html) {
        if (r.ok) { main.innerHTML = html; tick(); }
      });
    });
  }

  function poll() {
    fetch(api, { headers: { "Accept": "application/json" } }).then(function (r) {
      return r.text().then(function (body) {
        if (!r.ok) { stale("head unreachable"); }
        else { fresh(); }
        if (last !== null && body !== last) { last = body; return refresh(); }
        last = body;
      });
    }).catch(function () { stale("agent unreachable"); })
      .then(function () { window.setTimeout(poll, 2000); });
  }

  window.setInterval(tick, 1000);
  if (api) { poll(); }
}());
