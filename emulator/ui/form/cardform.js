/* payemu's card form for the real eWallet JS library (@orchestrasolutions/ewallet).
 *
 * The library opens this page (popup or iframe) and speaks to it with postMessage:
 * {messageType, payload}. The form sends Ready; the library answers CardEntry (the
 * session's card-form data, its token in threeDsToken); the form asks BinLookup for the
 * first digits typed; on submit the form hands the card to payemu (POST {url}/enterCard,
 * checked as the hosted page checks it) and sends the library CardData with only the
 * reference payemu answered. For an OTP challenge the library sends OtpRequest and the
 * form answers OTP with the code.
 */
(function () {
  "use strict";
  var target = window.opener || window.parent;
  var session = null; // {token, url, data}
  var $ = function (selector) { return document.querySelector(selector); };
  var lastIin = "";

  function send(type, payload) {
    target.postMessage({ messageType: type, payload: payload }, "*");
  }

  function status(text, kind) {
    var box = $("[data-testid=status]");
    box.hidden = !text;
    box.textContent = text || "";
    box.className = "outcome " + (kind || "info");
  }

  function claims(token) {
    var body = String(token || "").split(".")[1] || "";
    body = body.replace(/-/g, "+").replace(/_/g, "/");
    var bytes = atob(body + "===".slice((body.length + 3) % 4));
    var text = decodeURIComponent(Array.prototype.map.call(bytes, function (c) {
      return "%" + ("0" + c.charCodeAt(0).toString(16)).slice(-2);
    }).join(""));
    return JSON.parse(text);
  }

  function money(amount, currency) {
    return Number(amount).toFixed(2) + " " + currency;
  }

  function clearErrors() {
    document.querySelectorAll("[data-error-for]").forEach(function (el) { el.textContent = ""; });
  }

  function showErrors(problems, where) {
    (problems || []).forEach(function (problem) {
      var slot = where.querySelector('[data-error-for="' + problem.fieldName + '"]') ||
        where.querySelector('[data-error-for="body"]') || where.querySelector("[data-error-for]");
      if (slot) slot.textContent = (problem.errors || []).join(" ");
    });
  }

  function showEntry(payload) {
    var data = payload || {};
    var token = data.threeDsToken;
    session = { token: token, url: claims(token).pld.url, data: data };
    $("[data-testid=waiting]").hidden = true;
    $("#entry").hidden = false;
    if (data.merchantName) $("[data-testid=merchant]").textContent = data.merchantName;
    $("[data-testid=amount]").textContent = data.operation === "TOKENIZE" ? "Save a card" : money(data.amount, data.currency);
    var brands = data.allowedBrands || [];
    $("[data-testid=brands]").textContent = "Accepted cards: " + (brands.length ? brands.join(", ") : "all brands");
    var stored = $("#stored");
    (data.storedCards || []).forEach(function (card) {
      var form = document.createElement("form");
      form.className = "stored";
      form.dataset.testid = "stored-card-" + card.index;
      form.setAttribute("data-testid", "stored-card-" + card.index);
      var line = document.createElement("div");
      line.className = "stored-line";
      line.textContent = card.brand + " •••• " + card.lastDigits + "  " +
        ("0" + card.expirationMonth).slice(-2) + "/" + card.expirationYear;
      var label = document.createElement("label");
      label.textContent = "Security code";
      var input = document.createElement("input");
      input.name = "cvv";
      input.inputMode = "numeric";
      input.maxLength = 4;
      input.required = true;
      label.appendChild(input);
      var error = document.createElement("span");
      error.className = "field-error";
      error.setAttribute("data-error-for", "cvv");
      var button = document.createElement("button");
      button.type = "submit";
      button.textContent = "Pay with this card";
      [line, label, error, button].forEach(function (el) { form.appendChild(el); });
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        enter({ storedCard: card.index, cvv: input.value.trim() }, form);
      });
      stored.appendChild(form);
    });
    if ((data.storedCards || []).length) $("#new-card-title").textContent = "Another card";
  }

  function enter(choice, form) {
    clearErrors();
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    fetch(session.url + "/enterCard", {
      method: "POST",
      headers: { "Authorization": "Bearer " + session.token, "Content-Type": "application/json" },
      body: JSON.stringify(choice)
    }).then(function (response) {
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (answer) {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      if (!answer.ok) {
        showErrors(answer.body, form);
        return;
      }
      status("Paying with " + answer.body.brand + " " + answer.body.maskedCard + "…");
      $("#entry").hidden = true;
      send("CardData", {
        success: true,
        message: "",
        data: {
          cardRef: answer.body.cardRef,
          browserProperties: {
            language: navigator.language,
            screenWidth: screen.width,
            screenHeight: screen.height,
            timeZoneOffset: new Date().getTimezoneOffset(),
            userAgent: navigator.userAgent
          },
          billingInfo: null,
          shippingInfo: null
        }
      });
    }).catch(function (error) {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      status("payemu did not answer: " + error, "error");
    });
  }

  $("#new-card").addEventListener("submit", function (event) {
    event.preventDefault();
    var form = event.target;
    var value = function (name) { return form.elements[name].value.trim(); };
    enter({
      card: {
        cardHolderName: value("cardHolderName"),
        cardNumber: value("cardNumber").replace(/[\s-]/g, ""),
        expirationMonth: parseInt(value("expirationMonth"), 10) || 0,
        expirationYear: parseInt(value("expirationYear"), 10) || 0,
        cvv: value("cvv")
      }
    }, form);
  });

  $("#new-card").elements.cardNumber.addEventListener("input", function (event) {
    var digits = event.target.value.replace(/\D/g, "");
    var iin = digits.slice(0, 6);
    if (iin.length === 6 && iin !== lastIin) {
      lastIin = iin;
      send("BinLookup", iin);
    }
  });

  $("#otp").addEventListener("submit", function (event) {
    event.preventDefault();
    var code = event.target.elements.otp.value.trim();
    var pattern = new RegExp("^" + (session && session.otpValidation ? session.otpValidation.replace(/^d/, "\\d") : "\\d{4,8}") + "$");
    if (!pattern.test(code)) {
      event.target.querySelector("[data-error-for=otp]").textContent = "Enter the code: 4 to 8 digits.";
      return;
    }
    event.target.hidden = true;
    status("Checking the code…");
    send("OTP", code);
  });

  window.addEventListener("message", function (event) {
    if (event.source !== target) return;
    var message = event.data || {};
    if (message.messageType === "CardEntry") {
      showEntry(message.payload);
    } else if (message.messageType === "BinLookup") {
      var found = message.payload || {};
      $("[data-testid=card-brand]").textContent = found.brand ? found.brand : "";
    } else if (message.messageType === "OtpRequest") {
      session.otpValidation = (message.payload || {}).otpValidation;
      status("");
      $("#otp").hidden = false;
    } else if (message.messageType === "AuthUrl") {
      status("Authenticate at " + message.payload);
    }
  });

  send("Ready", null);
}());
