/* The Orbchain mini-app: Telegram's web view hands us signed init data; everything else is our JSON API.
 *
 * No external script (not even Telegram's telegram-web-app.js): the init data is read from
 * window.Telegram.WebApp.initData when a host provides it, else from the tgWebAppData launch
 * parameter in the URL fragment, which is where Telegram puts it. The session token lives in
 * sessionStorage, so a reload reuses it (an init data opens one session only).
 */
(function () {
  "use strict";
  var TOKEN_KEY = "orbchain.tgapp.token";
  var $ = function (id) { return document.getElementById(id); };

  function initData() {
    var tg = window.Telegram && window.Telegram.WebApp;
    if (tg && tg.initData) { return tg.initData; }
    var hash = window.location.hash.replace(/^#/, "");
    return new URLSearchParams(hash).get("tgWebAppData") || "";
  }

  function status(text, kind) {
    var el = $("tg-status");
    el.textContent = text;
    el.className = "notice notice-" + (kind || "info");
    el.hidden = !text;
  }

  function request(method, path, body) {
    var headers = { "Accept": "application/json" };
    var token = sessionStorage.getItem(TOKEN_KEY);
    if (token) { headers["Authorization"] = "Bearer " + token; }
    if (body !== undefined) { headers["Content-Type"] = "application/json"; }
    return fetch(path, { method: method, headers: headers, credentials: "omit",
                         body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (response) {
        return response.json().then(function (json) {
          if (!response.ok) {
            var error = new Error((json && json.message) || ("HTTP " + response.status));
            error.status = response.status;
            error.code = json && json.error && json.error.code;
            throw error;
          }
          return json.data;
        });
      });
  }

  function fill(list, items, render) {
    list.textContent = "";
    items.forEach(function (item) {
      var li = document.createElement("li");
      render(item).forEach(function (text) {
        var span = document.createElement("span");
        span.textContent = text;
        li.appendChild(span);
      });
      list.appendChild(li);
    });
    if (!items.length) {
      var empty = document.createElement("li");
      empty.textContent = "Nothing yet.";
      list.appendChild(empty);
    }
  }

  // An open invoice's status follows the hosted page's public event stream (events_url: its track id is the
  // capability, as on /pay), in place; the list's next refresh closes the old streams and opens the new ones.
  var streams = [];
  function follow(list, payments) {
    streams.forEach(function (source) { source.close(); });
    streams = [];
    if (!window.EventSource) { return; }
    payments.forEach(function (p, i) {
      if (!p.events_url) { return; }
      var statusCell = list.children[i] && list.children[i].children[1];
      if (!statusCell) { return; }
      var source = new EventSource(p.events_url);
      source.addEventListener("payment", function (event) {
        var state;
        try { state = JSON.parse(event.data); } catch (e) { return; }
        statusCell.textContent = state.status;
        document.dispatchEvent(new CustomEvent("orbchain:payment", { detail: state }));
        if (state.final) { source.close(); }
      });
      streams.push(source);
    });
  }

  function options(select, coins) {
    select.textContent = "";
    coins.forEach(function (coin) {
      var option = document.createElement("option");
      option.value = coin;
      option.textContent = coin;
      select.appendChild(option);
    });
  }

  function show(el, text, ok) {
    el.textContent = text;
    el.className = "notice notice-" + (ok ? "success" : "error");
    el.hidden = false;
  }

  function refresh() {
    return Promise.all([
      request("GET", "/tgapp/balances").then(function (data) {
        fill($("tg-balances"), data.balances, function (b) { return [b.coin, b.amount]; });
      }),
      request("GET", "/tgapp/payments").then(function (data) {
        fill($("tg-payments"), data.payments, function (p) { return [p.track_id, p.status]; });
        follow($("tg-payments"), data.payments);
      }),
      request("GET", "/tgapp/mfa/status").then(function (data) {
        $("tg-mfa-state").textContent = data.totpEnabled ? "2FA is on." : "2FA is off: sending and swapping need it.";
        $("tg-mfa-setup").hidden = data.totpEnabled;
      })
    ]);
  }

  function start(merchant) {
    $("tg-account").textContent = merchant.account_id;
    var coins = merchant.accepted_coins;
    ["tg-receive-coin", "tg-payout-coin", "tg-swap-from", "tg-swap-to"].forEach(function (id) { options($(id), coins); });
    if (coins.length > 1) { $("tg-swap-to").value = coins[1]; }
    status("", "info");
    $("tg-app").hidden = false;
    return refresh();
  }

  // With two-factor authentication on, a session needs the holder's code (or a recovery code) first: ask for it,
  // then send the same init data again with it (the server spends init data only when a session opens).
  function askCode(message) {
    return new Promise(function (resolve) {
      var form = $("tg-signin-form");
      status(message, "info");
      $("tg-signin-code").value = "";
      form.hidden = false;
      form.onsubmit = function (event) {
        event.preventDefault();
        form.hidden = true;
        status("Signing in…", "info");
        resolve(value("tg-signin-code"));
      };
    });
  }

  function open(body) {
    return request("POST", "/tgapp/session", body).catch(function (error) {
      if (error.code !== "totp_required" && error.code !== "totp_invalid") { throw error; }
      return askCode(error.message).then(function (code) { body.totp_code = code; return open(body); });
    });
  }

  function session() {
    var token = sessionStorage.getItem(TOKEN_KEY);
    var merchant = sessionStorage.getItem(TOKEN_KEY + ".merchant");
    if (token && merchant) { return Promise.resolve(JSON.parse(merchant)); }
    var data = initData();
    if (!data) { return Promise.reject(new Error("Open this page from the Orbchain bot in Telegram.")); }
    return open({ init_data: data }).then(function (answer) {
      sessionStorage.setItem(TOKEN_KEY, answer.token);
      sessionStorage.setItem(TOKEN_KEY + ".merchant", JSON.stringify(answer.merchant));
      return answer.merchant;
    });
  }

  function forget() {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(TOKEN_KEY + ".merchant");
  }

  function value(id) { return $(id).value.trim(); }

  $("tg-receive-form").addEventListener("submit", function (event) {
    event.preventDefault();
    request("GET", "/tgapp/receive?coin=" + encodeURIComponent(value("tg-receive-coin"))).then(function (data) {
      $("tg-receive-address").textContent = data.address;
      $("tg-receive-network").textContent = data.coin + " on " + data.network_label;
      $("tg-receive-qr").src = "/tgapp/qr?data=" + encodeURIComponent(data.address);
      $("tg-receive").hidden = false;
    }).catch(function (error) { status(error.message, "error"); });
  });

  $("tg-mfa-start").addEventListener("click", function () {
    request("POST", "/tgapp/mfa/setup").then(function (data) {
      $("tg-mfa-secret").textContent = data.secret;
      $("tg-mfa-secret-box").hidden = false;
    }).catch(function (error) { status(error.message, "error"); });
  });

  $("tg-mfa-form").addEventListener("submit", function (event) {
    event.preventDefault();
    request("POST", "/tgapp/mfa/verify", { code: value("tg-mfa-code") }).then(function (data) {
      // The recovery codes, shown this once: each signs in once if the authenticator is lost.
      fill($("tg-recovery-codes"), data.recovery_codes || [], function (code) { return [code]; });
      $("tg-recovery").hidden = false;
      return refresh();
    }).catch(function (error) { status(error.message, "error"); });
  });

  $("tg-payout-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var body = { currency: value("tg-payout-coin"), destination: value("tg-payout-destination"),
                 amount: value("tg-payout-amount"), totp_code: value("tg-payout-code") };
    request("POST", "/tgapp/payout", body).then(function (data) {
      show($("tg-payout-result"), (data.kind === "transfer" ? "Transferred " : "Sent ") + data.amount + " " +
           data.coin + " (" + data.status + ", " + data.track_id + ")", true);
      return refresh();
    }).catch(function (error) { show($("tg-payout-result"), error.message + (error.code ? " (" + error.code + ")" : ""), false); });
  });

  function swapBody() {
    return { from_coin: value("tg-swap-from"), to_coin: value("tg-swap-to"), amount: value("tg-swap-amount") };
  }

  $("tg-swap-quote").addEventListener("click", function () {
    request("POST", "/tgapp/swap/quote", swapBody()).then(function (data) {
      show($("tg-swap-result"), "About " + data.to_amount + " " + data.to_coin + " for " + data.from_amount + " " +
           data.from_coin, true);
    }).catch(function (error) { show($("tg-swap-result"), error.message, false); });
  });

  $("tg-swap-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var body = swapBody();
    body.totp_code = value("tg-swap-code");
    request("POST", "/tgapp/swap", body).then(function (data) {
      show($("tg-swap-result"), "Swap " + data.swap_id + ": " + data.status, true);
      return refresh();
    }).catch(function (error) { show($("tg-swap-result"), error.message + (error.code ? " (" + error.code + ")" : ""), false); });
  });

  $("tg-unlink").addEventListener("click", function () {
    request("POST", "/tgapp/unlink").then(function () {
      forget();
      $("tg-app").hidden = true;
      status("This chat is unlinked. Send /start to the bot to link it again.", "info");
    }).catch(function (error) { status(error.message, "error"); });
  });

  var tg = window.Telegram && window.Telegram.WebApp;
  if (tg && tg.ready) { tg.ready(); }
  status("Signing in…", "info");
  session().then(start).catch(function (error) {
    if (error.status === 401) { forget(); }
    status(error.message, "error");
  });
}());
