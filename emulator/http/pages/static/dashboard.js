/* payemu dashboard: reloads the live part every two seconds (unless switched off),
 * keeping open <details> open. */
(function () {
  "use strict";
  var live = document.getElementById("live");
  var toggle = document.getElementById("auto-refresh");
  if (!live) return;

  function refresh() {
    if (toggle && !toggle.checked) return;
    fetch(live.dataset.partial, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var open = {};
        Array.prototype.forEach.call(live.querySelectorAll("details[open]"), function (el) {
          open[el.dataset.key] = true;
        });
        live.innerHTML = html;
        Array.prototype.forEach.call(live.querySelectorAll("details"), function (el) {
          if (open[el.dataset.key]) el.open = true;
        });
      })
      .catch(function () { /* server restarting: try again next time */ });
  }

  window.setInterval(refresh, 2000);
})();
