/* The dashboard's only script, loaded with the page's nonce. Every action works without it:
   it adds copy buttons and posts the sign-in fragments (#google-auth=..., #tg-link=...). */
(function () {
  "use strict";
  var hash = window.location.hash || "";
  var match = /^#(google-auth|tg-link)=(.+)$/.exec(hash);
  var form = document.getElementById("fragment-form");
  if (match && form) {
    form.querySelector("input[name=kind]").value = match[1];
    form.querySelector("input[name=value]").value = decodeURIComponent(match[2]);
    history.replaceState(null, "", window.location.pathname + window.location.search);
    form.submit();
    return;
  }
  // Live status: an open payment's detail follows its stream (payment_live.js); without script: the Refresh link.
  document.querySelectorAll("[data-copy]").forEach(function (el) {
    if (!navigator.clipboard) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy secondary";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy " + (el.getAttribute("data-copy") || "value"));
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(el.textContent.trim()).then(function () { button.textContent = "Copied"; });
    });
    el.insertAdjacentElement("afterend", button);
  });
})();
