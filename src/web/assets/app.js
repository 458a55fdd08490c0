// abxd's web view: the live part of the page is replaced by each event of its stream, so the
// page follows the daemon without a reload. The HTML comes escaped from the daemon.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var state = document.getElementById("state");
  var source = live && live.getAttribute("data-events");
  if (!source || !window.EventSource) {
    return;
  }
  var events = new EventSource(source);
  var updates = 0;
  events.addEventListener("live", function (event) {
    live.innerHTML = event.data;
    updates += 1;
    document.body.setAttribute("data-updates", String(updates));
    state.textContent = "· live";
  });
  events.onerror = function () {
    state.textContent = "· reconnecting…";
  };
})();
