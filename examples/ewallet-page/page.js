// The merchant's front end: a session token from its own server, the real eWallet
// library (window.eWallet, loaded from node_modules), and the result token back to the
// server, which verifies it with payemu before the shop believes it.
(function () {
  "use strict";
  var asked = new URLSearchParams(location.search);
  var kind = asked.get("kind") || "card";
  var display = asked.get("display") === "popup" ? "popup" : "iframe";  // the library's default is a popup
  var result = document.getElementById("result");
  var details = document.getElementById("details");

  function show(text, css, extra) {
    result.textContent = text;
    result.className = css || "";
    if (extra !== undefined) details.textContent = JSON.stringify(extra, null, 2);
  }

  function post(path, body) {
    return fetch(path, {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)
    }).then(function (response) { return response.json(); });
  }

  post("/session", {kind: kind}).then(function (session) {
    if (!session.token) throw new Error("no session: " + JSON.stringify(session));
    var engine = new eWallet.Engine(session.token, undefined, "en", {displayMode: display});
    return engine.checkAvailability().then(function (methods) {
      document.getElementById("methods").textContent = methods.join(", ");
      show("Ready to pay (" + engine.getSessionType() + ").");
      engine.payBy([{name: "CardPay", domEntitySelector: "#pay-by-card"}], function (outcome) {
        var parsed = engine.parseResultToken(outcome.token);
        var data = parsed[0], ok = parsed[1];
        if (!data.upgChargeResults) {  // the library's own failure: no result token
          show("Payment failed: " + (data.clientErrorMessage || outcome.token), "bad");
          return;
        }
        // never trust the browser: the server verifies the token with payemu
        post("/validate", {token: outcome.token}).then(function (checked) {
          if (!checked.valid) {
            show("The result token did not validate.", "bad", checked.result);
            return;
          }
          var final = checked.result.upgChargeResults;
          if (ok && (final.operationResultCode === "Success" || final.operationResultCode === "Accepted")) {
            show("Success: paid " + checked.result.transactionAmount.toFixed(2) + " " +
                 checked.result.transactionCurrency + " through " + checked.result.providerAccountId +
                 " (reference " + checked.result.providerTransactionId + ")", "ok", checked.result);
          } else {
            show("Declined: " + final.operationResultCode + " (" + (final.rejectReasonCode || "no reason") + ") " +
                 (final.operationResultDescription || ""), "bad", checked.result);
          }
        });
      }, {text: "Pay by card"});
    });
  }).catch(function (error) {
    show("Could not start the payment: " + error, "bad");
  });
}());
