/* The hosted payment page, live: countdown, then status, amounts and confirmations from the page's
   event stream (GET /pay/{id}/events), updated in place. Each state also goes to the merchant's embed as
   document "orbchain:payment" events (detail: the state). Without JavaScript the page reloads itself
   (the meta refresh inside <noscript>, SPEC 4.14) or by the "Check again" link; when the stream is refused,
   this script reloads every 15 s. It also shows the copy buttons (hidden in the HTML: without JavaScript
   the values stay selectable text). Every word it writes comes from the page (data-texts, rendered in the
   payer's language by the server). */
(function () {
  "use strict";
  var RELOAD_MS = 15000;
  var NOTICE_CLASSES = {Paying: "notice notice-info", Paid: "notice notice-success",
                        Expired: "notice notice-error", Cancelled: "notice notice-error"};
  var root = document.getElementById("payment");
  var TEXTS = {statuses: {}, notices: {}, tx_statuses: {}};
  try { TEXTS = JSON.parse(root.getAttribute("data-texts")) || TEXTS; } catch (e) { /* no page texts: the raw values */ }
  function fill(pattern, values) {
    return String(pattern || "").replace(/\{(\w+)\}/g, function (all, name) { return name in values ? values[name] : all; });
  }
  function say(key, fallback) { return TEXTS[key] || fallback; }
  var countdown = document.getElementById("countdown");
  var timer = null;
  var shownDue = byId("due-amount") ? byId("due-amount").textContent : null;  // what the QR asks for, once paid in part

  function byId(id) { return document.getElementById(id); }
  function text(id, value) { var el = byId(id); if (el && value !== null && value !== undefined) { el.textContent = value; } }
  function hideAll(selector) {
    var found = document.querySelectorAll(selector);
    for (var i = 0; i < found.length; i++) { found[i].hidden = true; }
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function startCountdown() {
    if (!countdown) { return; }
    var end = Date.now() + Number(countdown.getAttribute("data-remaining")) * 1000;
    function tick() {
      var s = Math.max(0, Math.round((end - Date.now()) / 1000));
      var h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
      countdown.textContent = (h ? h + ":" + pad(m) : pad(m)) + ":" + pad(s % 60);
      timer = s > 0 ? setTimeout(tick, 1000) : null;
    }
    tick();
  }
  function stopCountdown() {
    if (timer !== null) { clearTimeout(timer); timer = null; }
  }

  function showTransactions(list) {
    var section = byId("transactions"), ul = byId("tx-list");
    if (!section || !ul || !list || !list.length) { return; }
    while (ul.firstChild) { ul.removeChild(ul.firstChild); }
    list.forEach(function (tx) {
      var li = document.createElement("li");
      var hash = document.createElement("code");
      hash.className = "hash";
      hash.textContent = tx.tx_hash;
      var line = document.createElement("span");
      line.className = "tx-line";
      var amount = document.createElement("strong");
      amount.textContent = tx.amount + " " + (tx.asset || tx.coin);
      var confirmations = document.createElement("span");
      confirmations.className = "confirmations";
      confirmations.textContent = tx.confirmations < tx.required ?
        fill(say("of", "{done} of {required}"), {done: tx.confirmations, required: tx.required}) : String(tx.confirmations);
      var status = document.createElement("span");
      status.className = "tx-status";
      status.textContent = TEXTS.tx_statuses[tx.status.toLowerCase()] ||
        tx.status.charAt(0).toUpperCase() + tx.status.slice(1).toLowerCase();
      line.appendChild(amount);
      line.appendChild(document.createTextNode(" · "));
      line.appendChild(confirmations);
      line.appendChild(document.createTextNode(" " + say("confirmations", "confirmations") + " · "));
      line.appendChild(status);
      li.appendChild(hash);
      li.appendChild(line);
      ul.appendChild(li);
    });
    section.hidden = false;
  }

  // Copies the text of the element the button names; the clipboard API needs a secure context,
  // else the text is selected and copied the old way (and stays selected for a manual copy).
  function copyText(el, done) {
    var value = el.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(value).then(done, function () { selectAndCopy(el, done); });
    } else {
      selectAndCopy(el, done);
    }
  }
  function selectAndCopy(el, done) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try { if (document.execCommand("copy")) { done(); } } catch (e) { /* left selected */ }
  }
  function setUpCopyButtons() {
    var buttons = document.querySelectorAll("button.copy[data-copy]");
    for (var i = 0; i < buttons.length; i++) {
      (function (button) {
        var target = byId(button.getAttribute("data-copy"));
        if (!target) { return; }
        var label = button.textContent;
        button.hidden = false;
        button.addEventListener("click", function () {
          copyText(target, function () {
            button.textContent = say("copied", "Copied");
            setTimeout(function () { button.textContent = label; }, 2000);
          });
        });
      })(buttons[i]);
    }
  }

  function showReturnLink(url) {
    var notice = byId("notice");
    // Only an http(s) URL becomes a link (the server sends no other; never a javascript: one).
    if (!url || !/^https?:\/\//i.test(url) || !notice || byId("return-link")) { return; }
    var p = document.createElement("p");
    p.className = "actions";
    var a = document.createElement("a");
    a.id = "return-link";
    a.className = "button";
    a.href = url;
    a.rel = "noopener noreferrer";
    a.textContent = say("return", "Return to the store");
    p.appendChild(a);
    notice.parentNode.insertBefore(p, notice.nextSibling);
  }

  function apply(state) {
    // Part arrived and part is due: the server draws that state (amounts, QR for the rest, countdown), so the
    // page reloads when the due amount moves and otherwise only follows the transactions.
    var underpaid = !state.final && !!state.paid_amount && state.paid_amount !== "0" &&
      !!state.due_amount && state.due_amount !== "0";
    if (underpaid && shownDue !== state.due_amount && document.querySelector(".deposit")) {
      location.reload();
      return;
    }
    if (underpaid) {
      showTransactions(state.transactions);
      document.dispatchEvent(new CustomEvent("orbchain:payment", {detail: state}));
      return;
    }
    var badge = byId("status");
    if (badge) {
      badge.textContent = TEXTS.statuses[state.status] || state.status;
      badge.className = "badge badge-" + state.status.toLowerCase();
    }
    if (state.pay_amount) {
      document.title = fill(say("title", "{status} · Pay {amount} {currency}"), {
        status: TEXTS.statuses[state.status] || state.status, amount: state.pay_amount,
        currency: TEXTS.currency || state.pay_currency});
      text("pay-amount", state.pay_amount);
    }
    var notice = byId("notice"), wording = TEXTS.notices[state.status];
    if (notice && wording && NOTICE_CLASSES[state.status]) {
      notice.className = NOTICE_CLASSES[state.status];
      notice.textContent = wording;
    }
    if (state.paid_amount && state.paid_amount !== "0") {
      text("paid-amount", state.paid_amount);
      text("due-amount", state.due_amount);
      var received = byId("received");
      if (received) { received.hidden = false; }
    }
    showTransactions(state.transactions);
    if (state.status !== "Waiting") {
      stopCountdown();
      hideAll(".picker, .countdown");
    }
    if (state.final) {
      hideAll(".deposit, .devnet, .countdown");
      text("amount-label", say("amount", "Amount"));
      if (state.status === "Paid") { showReturnLink(state.return_url); }
    }
    document.dispatchEvent(new CustomEvent("orbchain:payment", {detail: state}));
  }

  setUpCopyButtons();
  startCountdown();
  if (!root || !window.EventSource) {
    if (root) { setTimeout(function () { location.reload(); }, RELOAD_MS); }
    return;
  }
  var source = new EventSource(root.getAttribute("data-events"));
  source.addEventListener("payment", function (event) {
    var state;
    try { state = JSON.parse(event.data); } catch (e) { return; }
    apply(state);
    if (state.final) { source.close(); }
  });
  source.onerror = function () {
    // A dropped stream reconnects by itself; a refused one (busy, unknown) falls back to reloading.
    if (source.readyState === EventSource.CLOSED) { setTimeout(function () { location.reload(); }, RELOAD_MS); }
  };
})();
