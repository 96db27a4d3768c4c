// The run page while its run executes: each task's sections appear as the model writes them.
//
// Reads GET /api/runs/{id}/stream (server-sent events; see docs/web.md). A task being written fills the page's
// live card, one card per section, text set with textContent only. When a task is stored, or the run ends, the
// page reloads: the server renders the stored state (badges, sources, actions), never this script. Without
// scripts the page refreshes itself instead (its <noscript> meta refresh). No framework, nothing from elsewhere:
// the page's Content-Security-Policy allows scripts and connections to this server only.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || typeof window.EventSource !== "function") {
    return;
  }
  var FIELDS = ["hook", "grip", "payoff", "reinforce", "loop"];
  var title = live.querySelector(".live-title");
  var status = live.querySelector(".live-status");
  var cards = live.querySelector(".live-cards");
  var source = new EventSource(live.getAttribute("data-stream"));
  var reloading = false;

  function reload() {
    if (!reloading) {
      reloading = true;
      source.close();
      window.location.reload();
    }
  }

  function card(field) {
    var found = cards.querySelector('[data-field="' + field + '"]');
    if (found) {
      return found;
    }
    found = document.createElement("article");
    found.className = "card section-card card-live";
    found.setAttribute("data-field", field);
    var heading = document.createElement("h3");
    heading.textContent = field.charAt(0).toUpperCase() + field.slice(1);
    var text = document.createElement("p");
    text.className = "card-text";
    found.appendChild(heading);
    found.appendChild(text);
    // Sections keep the contract's order whatever order they arrive in.
    var next = null;
    for (var i = FIELDS.indexOf(field) + 1; i < FIELDS.length && !next; i++) {
      next = cards.querySelector('[data-field="' + FIELDS[i] + '"]');
    }
    cards.insertBefore(found, next);
    return found;
  }

  function show(task) {
    var progress = task.progress || {};
    live.hidden = false;
    live.setAttribute("data-live-task", task.task_id);
    title.textContent = task.position + 1 + ". " + task.task_id;
    var seconds = (Date.parse(progress.updated_at) - Date.parse(progress.started_at)) / 1000;
    var parts = [progress.writing ? "writing " + progress.writing.toUpperCase() : "starting"];
    parts.push(progress.chunks + " chunks");
    if (seconds >= 0) {
      parts.push(seconds.toFixed(1) + " s");
    }
    if (progress.call > 1) {
      parts.push("request " + progress.call);
    }
    status.textContent = parts.join(" · ");
    var shown = {};
    FIELDS.forEach(function (field) {
      var value = task.loop_output[field];
      if (typeof value === "string" && value) {
        card(field).querySelector(".card-text").textContent = value;
        shown[field] = true;
      }
    });
    // A new request for the task (a repair) starts its text again: drop sections it has not written yet.
    Array.prototype.slice.call(cards.children).forEach(function (element) {
      if (!shown[element.getAttribute("data-field")]) {
        cards.removeChild(element);
      }
    });
  }

  source.addEventListener("task", function (event) {
    var task = JSON.parse(event.data);
    if (task.validation && task.validation.status === "in_progress") {
      show(task);
    } else {
      reload();
    }
  });
  source.addEventListener("end", reload);
  source.onerror = function () {
    // The browser reconnects by itself (with Last-Event-ID); a stream refused for good falls back to refreshing.
    if (source.readyState === EventSource.CLOSED) {
      window.setTimeout(reload, 2000);
    }
  };
})();
