// Draws the group's history charts from their JSON (plotly figures built by the server): the
// lag, and the queue allocation with its latest changes listed below it; redrawn every minute
// while the tab is visible.
(function () {
  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
  }

  function listChanges(changes) {
    var table = document.getElementById("allocation-changes");
    if (!table) return;
    var body = table.querySelector("tbody");
    body.textContent = "";
    changes.forEach(function (c) {
      var row = document.createElement("tr");
      cell(row, c.at.replace("T", " ").slice(0, 19));
      cell(row, c.queue);
      cell(row, c.from || "nobody");
      cell(row, c.to || "nobody");
      body.appendChild(row);
    });
    table.hidden = changes.length === 0;
  }

  function draw(id, empty) {
    var el = document.getElementById(id);
    if (!el || document.hidden) return;
    fetch(el.dataset.url, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (fig) {
        if (!fig.points) {
          el.innerHTML = '<p class="muted">' + empty + "</p>";
          return;
        }
        Plotly.react(el, fig.data, fig.layout, { displaylogo: false, responsive: true });
        el.dataset.points = fig.points;
        if (fig.changes) {
          el.dataset.total = fig.total;
          listChanges(fig.changes);
        }
      });
  }

  function drawAll() {
    draw("lag-chart", "No history yet: points appear as polls are recorded.");
    draw("allocation-chart", "No history yet: changes appear as polls are recorded.");
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    setInterval(drawAll, 60000);
  });
})();
