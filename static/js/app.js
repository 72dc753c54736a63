/* ReasoningBank dashboard: the few lines of JS that htmx needs. Reading works without JS. */
(function () {
  if (window.rbAppLoaded) return;
  window.rbAppLoaded = true;
  // Validation errors come back as 400 with a partial that shows the message: swap it in
  // (htmx leaves 4xx responses unswapped by default).
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr && event.detail.xhr.status === 400) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  // Filter forms: leave empty fields out of GET requests, so pushed URLs stay short and readable.
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    var form = elt && elt.closest ? elt.closest("form.filters") : null;
    var data = event.detail.formData;
    if (!form || event.detail.verb !== "get" || !data) return;
    Array.from(data.keys()).forEach(function (key) {
      if (data.getAll(key).every(function (v) { return v === ""; })) data.delete(key);
    });
  });
})();
