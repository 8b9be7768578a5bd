/*! Orbchain donate button (SPEC 4.14). Usage:
 * <div class="orbchain-donate" data-slug="abcd2345efgh"></div>
 * <script src="https://<gateway>/assets/donate.js" async></script>
 * Attributes: data-slug (required), data-label, data-color (#rgb or #rrggbb),
 * data-target (popup | blank), data-amount (buyer-entered links), data-origin.
 * No dependencies; a bad attribute skips that element and never throws. */
(function (w, d) {
  "use strict";
  if (w.OrbchainDonate) { return; } // loaded twice: the first copy already mounts
  var MOUNTED = "data-orbchain-mounted";
  var SLUG = /^[A-Za-z0-9_-]{1,64}$/;
  var COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
  var AMOUNT = /^[0-9]{1,20}(?:\.[0-9]{1,18})?$/;
  var script = d.currentScript;
  var scriptOrigin = originOf(script && script.src);

  function originOf(value) {
    try {
      var url = new URL(value, w.location.href);
      return (url.protocol === "https:" || url.protocol === "http:") ? url.origin : null;
    } catch (e) { return null; }
  }

  function textColor(hex) {
    var h = hex.length === 4 ? hex.replace(/[0-9a-f]/gi, "$&$&") : hex;
    var n = parseInt(h.slice(1), 16);
    var luma = 0.299 * (n >> 16) + 0.587 * (n >> 8 & 255) + 0.114 * (n & 255);
    return luma > 150 ? "#111827" : "#ffffff";
  }

  function mount(el) {
    try {
      if (!el || el.nodeType !== 1 || el.hasAttribute(MOUNTED)) { return null; }
      var slug = (el.getAttribute("data-slug") || "").trim();
      var custom = el.getAttribute("data-origin");
      var origin = custom ? originOf(custom.trim()) : scriptOrigin;
      if (!SLUG.test(slug) || !origin) { return null; }
      var url = origin + "/l/" + encodeURIComponent(slug);
      var amount = (el.getAttribute("data-amount") || "").trim();
      if (AMOUNT.test(amount)) { url += "?amount=" + encodeURIComponent(amount); }
      var color = (el.getAttribute("data-color") || "").trim();
      if (!COLOR.test(color)) { color = "#f59e0b"; }
      var label = (el.getAttribute("data-label") || "").trim().slice(0, 80) || "Donate crypto";
      var popup = el.getAttribute("data-target") !== "blank";
      var button = d.createElement("a");
      button.href = url;
      button.target = "_blank";
      button.rel = "noopener noreferrer";
      button.className = "orbchain-donate-button";
      button.textContent = label;
      button.style.cssText = "display:inline-block;padding:10px 18px;border-radius:8px;border:0;" +
        "font:600 15px/1.2 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;text-decoration:none;" +
        "cursor:pointer;background:" + color + ";color:" + textColor(color);
      if (popup) {
        button.addEventListener("click", function (event) {
          var left = Math.max(0, ((w.screenX || 0) + ((w.outerWidth || 480) - 480) / 2) | 0);
          var top = Math.max(0, ((w.screenY || 0) + ((w.outerHeight || 720) - 720) / 2) | 0);
          var win = w.open(url, "orbchain_donate", "popup=yes,width=480,height=720,left=" + left + ",top=" + top);
          if (win) { // blocked: the link's own new tab takes over
            try { win.opener = null; } catch (e) { /* cross-origin already */ }
            event.preventDefault();
          }
        });
      }
      el.setAttribute(MOUNTED, "true");
      el.appendChild(button);
      return button;
    } catch (e) { return null; }
  }

  function mountAll(root) {
    var nodes = (root && root.querySelectorAll ? root : d).querySelectorAll(".orbchain-donate");
    var mounted = 0;
    for (var i = 0; i < nodes.length; i++) { if (mount(nodes[i])) { mounted++; } }
    return mounted;
  }

  w.OrbchainDonate = { mount: mount, mountAll: mountAll };
  if (d.readyState === "loading") {
    d.addEventListener("DOMContentLoaded", function () { mountAll(); });
  } else {
    mountAll();
  }
})(window, document);
