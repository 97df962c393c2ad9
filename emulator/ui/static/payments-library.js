/* payemu stand-in for the client-side payments library (offline use).
 *
 * Same shape of calls as the real library:
 *   var engine = new eWallet.Engine(sessionToken);          // token from POST /EWalletOperations
 *   engine.checkAvailability().then(function (methods) {})  // ["CardPay"]
 *   engine.payBy([{name: "CardPay", domEntitySelector: "#card-button"}], function (result) {
 *     if (!result) return;                                  // cancelled
 *     var parsed = engine.parseResultToken(result.token);   // [data, ok]; data.upgChargeResults ...
 *     // send result.token to your server → POST /EWalletOperations/validateResults
 *   });
 * plus a shortcut that embeds the hosted page in an element:
 *   PayEmu.init({sessionToken: t, onResult: fn}).pay(element).then(function (resultToken) {});
 * The base URL is where this script was loaded from (or options.baseUrl). Only "CardPay"
 * is emulated; other method names are ignored. */
(function (global) {
  "use strict";
  var script = document.currentScript;
  var scriptOrigin = script && script.src ? new URL(script.src, global.location.href).origin : global.location.origin;
  var METHODS = ["CardPay"];

  function Engine(sessionToken, options) {
    if (!sessionToken) throw new Error("eWallet.Engine needs the session token");
    options = options || {};
    this.sessionToken = sessionToken;
    this.baseUrl = String(options.baseUrl || scriptOrigin).replace(/\/+$/, "");
    this.origin = new URL(this.baseUrl, global.location.href).origin;
  }

  Engine.prototype.pageUrl = function () {
    return this.baseUrl + "/_emulator/pay/" + encodeURIComponent(this.sessionToken) +
      "?origin=" + encodeURIComponent(global.location.origin);
  };

  Engine.prototype.checkAvailability = function () {
    return Promise.resolve(METHODS.slice());
  };

  /* Embed the hosted page in `container`; resolves with the first result token the page
   * hands over (success or decline). */
  Engine.prototype.pay = function (container) {
    var self = this;
    var frame = document.createElement("iframe");
    frame.src = self.pageUrl();
    frame.title = "Payment";
    frame.style.cssText = "width:100%;min-height:620px;border:0;";
    container.appendChild(frame);
    return new Promise(function (resolve) {
      function onMessage(event) {
        var data = event.data || {};
        if (event.origin !== self.origin || event.source !== frame.contentWindow) return;
        if (data.type !== "payemu:result" || !data.resultToken) return;
        global.removeEventListener("message", onMessage);
        resolve(data.resultToken);
      }
      global.addEventListener("message", onMessage);
    });
  };

  /* Render a button per supported method; a click opens the hosted page in an overlay.
   * `callback({token})` on a result, `callback(null)` when the customer closes it. */
  Engine.prototype.payBy = function (buttons, callback, style) {
    var self = this;
    var label = (style && style.text) || "Pay";
    (buttons || []).forEach(function (button) {
      if (METHODS.indexOf(button.name) < 0) return;
      var host = document.querySelector(button.domEntitySelector);
      if (!host) return;
      var element = document.createElement("button");
      element.type = "button";
      element.textContent = label + " by card";
      element.className = "payemu-pay-button";
      element.addEventListener("click", function () { self._overlay(callback); });
      host.appendChild(element);
    });
  };

  Engine.prototype._overlay = function (callback) {
    var shade = document.createElement("div");
    shade.style.cssText = "position:fixed;inset:0;background:rgba(0,0,0,.45);display:flex;" +
      "align-items:center;justify-content:center;z-index:2147483000;";
    var box = document.createElement("div");
    box.style.cssText = "background:#fff;border-radius:10px;width:min(520px,96vw);max-height:96vh;overflow:auto;position:relative;";
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "×";
    close.setAttribute("aria-label", "Close");
    close.style.cssText = "position:absolute;top:4px;right:8px;border:0;background:none;font-size:22px;cursor:pointer;";
    box.appendChild(close);
    shade.appendChild(box);
    document.body.appendChild(shade);
    var done = false;
    function finish(result) {
      if (done) return;
      done = true;
      shade.remove();
      callback(result);
    }
    close.addEventListener("click", function () { finish(null); });
    this.pay(box).then(function (token) { finish({ token: token }); });
  };

  /* Read a result token in the browser: [data, true], or [null, false] if unreadable.
   * Unverified: the merchant's server must still call validateResults. */
  Engine.prototype.parseResultToken = function (token) {
    try {
      var payload = String(token).split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      while (payload.length % 4) payload += "=";
      var claims = JSON.parse(global.atob(payload));
      return [claims.pld || null, Boolean(claims.pld)];
    } catch (e) {
      return [null, false];
    }
  };

  global.eWallet = { Engine: Engine };
  global.PayEmu = {
    init: function (options) {
      var engine = new Engine(options.sessionToken, options);
      return {
        engine: engine,
        pay: function (container) {
          return engine.pay(container).then(function (token) {
            if (typeof options.onResult === "function") options.onResult(token);
            return token;
          });
        }
      };
    }
  };
})(window);
