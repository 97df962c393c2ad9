/* payemu hosted payment page: sends the customer's choice to the page's own URL (POST,
 * JSON), shows the outcome and hands the signed result token to the merchant:
 *   window.opener / window.parent .postMessage({type: "payemu:result", resultToken, success}, <the embedding page's origin>)
 *   and, after a successful payment, a redirect to ?returnUrl=... with ?resultToken=... added. */
(function () {
  "use strict";
  var root = document.getElementById("payemu-pay");
  if (!root || root.dataset.state !== "open") return;
  var action = root.dataset.action;
  var returnUrl = root.dataset.returnUrl || "";
  // the embedding page's origin as payemu allowed it (never "*"); else payemu's own
  var targetOrigin = root.dataset.targetOrigin || window.location.origin;
  var status = document.getElementById("status");
  var forms = Array.prototype.slice.call(root.querySelectorAll("form"));

  function setBusy(busy) {
    forms.forEach(function (form) {
      Array.prototype.forEach.call(form.querySelectorAll("button, input"), function (el) { el.disabled = busy; });
    });
  }

  function show(kind, text) {
    status.className = "outcome " + kind;
    status.textContent = text;
  }

  function clearErrors() {
    Array.prototype.forEach.call(root.querySelectorAll("[data-error-for]"), function (el) { el.textContent = ""; });
  }

  function showErrors(form, entries) {
    var general = [];
    entries.forEach(function (entry) {
      var text = (entry.errors || []).join(" ");
      var slot = form.querySelector('[data-error-for="' + entry.fieldName + '"]');
      if (slot) slot.textContent = text; else general.push(text);
    });
    show("error", general.length ? general.join(" ") : "Please correct the highlighted fields.");
  }

  function notify(answer) {
    var message = { type: "payemu:result", resultToken: answer.resultToken, success: answer.success };
    [window.opener, window.parent !== window ? window.parent : null].forEach(function (target) {
      if (target) { try { target.postMessage(message, targetOrigin); } catch (e) { /* closed window */ } }
    });
  }

  function finish(answer) {
    document.getElementById("result-token").value = answer.resultToken;
    document.getElementById("token-box").hidden = false;
    notify(answer);
    if (answer.success) {
      document.getElementById("forms").hidden = true;
      show("ok", (answer.operationType === "Tokenize" ? "Card saved" : "Payment approved") +
        " — reference " + answer.gatewayReference + " via " + answer.providerAccountId +
        " (" + answer.attempts + (answer.attempts === 1 ? " attempt" : " attempts") + ").");
      if (returnUrl) {
        window.location.assign(returnUrl + (returnUrl.indexOf("?") < 0 ? "?" : "&") +
          "resultToken=" + encodeURIComponent(answer.resultToken));
      }
    } else {
      setBusy(false);
      show("error", declineMessage(answer.operationResultDescription, answer.operationResultCode));
    }
  }

  // One clean sentence: the gateway's last reason once ("Charge declined: Card declined."
  // reads "Card declined. You can try another card.").
  function declineMessage(description, code) {
    var parts = String(description || code || "The payment was declined").split(": ");
    var reason = parts[parts.length - 1].trim().replace(/[.\s]+$/, "");
    if (reason.toLowerCase().indexOf("declin") < 0) { reason = "Declined: " + reason; }
    return reason + ". You can try another card.";
  }

  function send(form, body) {
    clearErrors();
    setBusy(true);
    show("info", "Processing…");
    fetch(action, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (json) { return { ok: response.ok, body: json }; });
    }).then(function (reply) {
      if (reply.ok) { finish(reply.body); return; }
      setBusy(false);
      showErrors(form, Array.isArray(reply.body) ? reply.body : []);
    }).catch(function (error) {
      setBusy(false);
      show("error", "The payment could not be sent: " + error.message);
    });
  }

  function digits(value) { return String(value || "").replace(/[\s-]/g, ""); }

  forms.forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var data = new FormData(form);
      if (form.dataset.stored !== undefined) {
        send(form, { storedCard: Number(form.dataset.stored), cvv: digits(data.get("cvv")) });
        return;
      }
      send(form, {
        card: {
          cardHolderName: String(data.get("cardHolderName") || "").trim(),
          cardNumber: digits(data.get("cardNumber")),
          expirationMonth: parseInt(data.get("expirationMonth"), 10) || 0,
          expirationYear: parseInt(data.get("expirationYear"), 10) || 0,
          cvv: digits(data.get("cvv"))
        }
      });
    });
  });
})();
