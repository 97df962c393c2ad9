// The /docs page: Swagger UI over payemu's served schema. No inline script (the page's
// Content-Security-Policy allows scripts from payemu only), so the settings come from
// data attributes.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  var ui = SwaggerUIBundle({
    url: root.dataset.schema,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false,
    onComplete: function () {
      if (root.dataset.key) {
        ui.preauthorizeApiKey("ApiKeyAuth", root.dataset.key);
      }
    },
  });
  window.payemuApiPage = ui;
})();
