/* The payment detail of an open payment (any type), live: it follows the dashboard's own event stream (the element
   with data-events names it, GET /app/payments/{id}/events, the session cookie authenticates it) and updates the
   status and the deposits table in place; each state also goes to the document as an "orbchain:payment" event
   (detail: the state), as on the hosted page. Once the payment is Paid the page reloads once, so the server renders
   its receipt and refund form (Expired and Cancelled only update in place). When the session ends (signed out,
   revoked, idle) the stream says "signed-out" and the page reloads to the sign-in page. Without JavaScript the
   Refresh link stays; when the stream is refused (or EventSource is missing) the page reloads every 15 s. */
(function () {
  "use strict";
  var RELOAD_MS = 15000;
  var status = document.querySelector("[data-events]");
  if (!status) { return; }
  var reloading = false;

  function reloadIn(ms) {
    if (reloading) { return; }
    reloading = true;
    setTimeout(function () { window.location.reload(); }, ms);
  }

  // Each cell labelled by its column's header, as the server renders it (a card on a phone: table.cards).
  function cell(row, text, className) {
    var td = document.createElement("td");
    var head = document.querySelectorAll("#deposits thead th")[row.cells.length];
    if (head) { td.setAttribute("data-label", head.textContent); }
    if (className) { td.className = className; }
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function showDeposits(list) {
    var body = document.getElementById("deposit-rows");
    if (!body || !list || !list.length) { return; }
    // A transaction the server linked to its block explorer keeps that link (the stream carries no URL).
    var links = {};
    body.querySelectorAll("tr[data-tx] a.tx-link").forEach(function (a) {
      links[a.closest("tr").getAttribute("data-tx")] = a;
    });
    while (body.firstChild) { body.removeChild(body.firstChild); }
    list.forEach(function (tx) {
      var row = document.createElement("tr");
      row.setAttribute("data-tx", tx.tx_hash);
      var hash = document.createElement("code");
      hash.textContent = tx.tx_hash;
      var first = cell(row, "");
      if (Object.prototype.hasOwnProperty.call(links, tx.tx_hash)) {
        first.appendChild(links[tx.tx_hash]);
      } else {
        first.appendChild(hash);
      }
      cell(row, tx.amount + " " + tx.coin, "num");
      cell(row, tx.status);
      cell(row, String(tx.confirmations), "num");
      body.appendChild(row);
    });
  }

  function show(state) {
    status.textContent = state.status;
    status.className = "badge badge-" + String(state.status).toLowerCase();
    showDeposits(state.transactions);
    var cancel = document.getElementById("cancel-form");
    if (cancel && state.status !== "Waiting") { cancel.hidden = true; }
    document.dispatchEvent(new CustomEvent("orbchain:payment", { detail: state }));
  }

  if (!window.EventSource) { reloadIn(RELOAD_MS); return; }
  var source = new EventSource(status.getAttribute("data-events"));
  source.addEventListener("payment", function (event) {
    var state;
    try { state = JSON.parse(event.data); } catch (e) { return; }
    show(state);
    if (state.final) {
      source.close();
      if (state.status === "Paid") { reloadIn(0); }  // Expired by the clock stays Waiting in the row: no reload loop
    }
  });
  source.addEventListener("signed-out", function () {
    source.close();
    reloadIn(0);  // the server sends the sign-in page, naming why
  });
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED) { reloadIn(RELOAD_MS); }
  };
}());
