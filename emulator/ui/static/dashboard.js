/* payemu dashboard: reloads the live part every two seconds (unless switched off),
 * keeping each <details> as the viewer left it; copy buttons put a long value (a
 * reference, a token, a URL) on the clipboard. No inline script: the CSP forbids it. */
(function () {
  "use strict";
  var live = document.getElementById("live");
  var toggle = document.getElementById("auto-refresh");

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    var area = document.createElement("textarea");  // plain http on a shared host
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { document.body.removeChild(area); }
    return Promise.resolve();
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy") : null;
    if (!button) return;
    event.preventDefault();
    copyText(button.dataset.copy || "").then(function () {
      button.classList.add("copied");
      button.setAttribute("aria-label", "Copied");
      window.setTimeout(function () {
        button.classList.remove("copied");
        button.setAttribute("aria-label", "Copy");
      }, 1200);
    }, function () { /* the browser refused: the value is still in the title */ });
  });

  if (!live) return;

  function refresh() {
    if (toggle && !toggle.checked) return;
    fetch(live.dataset.partial, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var state = {};
        Array.prototype.forEach.call(live.querySelectorAll("details[data-key]"), function (el) {
          state[el.dataset.key] = el.open;
        });
        live.innerHTML = html;
        Array.prototype.forEach.call(live.querySelectorAll("details[data-key]"), function (el) {
          if (Object.prototype.hasOwnProperty.call(state, el.dataset.key)) el.open = state[el.dataset.key];
        });
      })
      .catch(function () { /* server restarting: try again next time */ });
  }

  window.setInterval(refresh, 2000);
})();
