/* ReasoningBank dashboard: the few lines of JS the pages need. Reading works without JS.
   Everything is here, behind data- attributes, rather than in inline handlers or <script> blocks: the
   Content-Security-Policy allows scripts from this origin only (docs/security/http-hardening.md). */
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
  // <select data-autosubmit>: choosing an option submits its form (the org switcher, project filters);
  // each such form has a <noscript> button for reading without JS.
  document.addEventListener("change", function (event) {
    var select = event.target;
    if (select && select.matches && select.matches("select[data-autosubmit]") && select.form) {
      select.form.submit();
    }
  });
  // <input data-select-on-focus>: a token shown once is selected whole for copying.
  document.addEventListener("focusin", function (event) {
    var input = event.target;
    if (input && input.matches && input.matches("input[data-select-on-focus]")) input.select();
  });
  // <form data-confirm="question">: a destructive form asks first.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form && form.getAttribute ? form.getAttribute("data-confirm") : null;
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);
  // [data-copy=id] buttons copy that element's text: progressive enhancement (hidden until the
  // clipboard is there; the text stays selectable without JavaScript).
  function copyButtons(root) {
    if (!navigator.clipboard) return;
    root.querySelectorAll("[data-copy]").forEach(function (button) {
      if (button.rbCopy) return;
      button.rbCopy = true;
      button.hidden = false;
      button.addEventListener("click", function () {
        var source = document.getElementById(button.getAttribute("data-copy"));
        var text = source.value !== undefined ? source.value : source.textContent;
        navigator.clipboard.writeText(text).then(function () {
          var label = button.textContent;
          button.textContent = "Copied";
          setTimeout(function () { button.textContent = label; }, 1500);
        });
      });
    });
  }
  // <fieldset data-picker>: its summary says what the ticked boxes mean, "all projects" when none is ticked.
  function pickerSummary(fieldset) {
    var summary = fieldset.querySelector("[data-picker-summary]");
    if (!summary) return;
    var ticked = Array.from(fieldset.querySelectorAll("input[type=checkbox]:checked")).map(function (box) {
      return box.getAttribute("data-picker-name");
    });
    summary.textContent = ticked.length
      ? summary.getAttribute("data-some") + " " + ticked.join(", ") + "."
      : summary.getAttribute("data-none");
  }
  document.querySelectorAll("fieldset[data-picker]").forEach(pickerSummary);
  document.addEventListener("change", function (event) {
    var fieldset = event.target && event.target.closest ? event.target.closest("fieldset[data-picker]") : null;
    if (fieldset) pickerSummary(fieldset);
  });
  copyButtons(document);
  document.addEventListener("htmx:load", function (event) { copyButtons(event.target); });
})();
