// Draws the group's history charts from their JSON (plotly figures built by the server): the
// lag, and the queue allocation with its latest changes listed below it; redrawn every minute
// while the tab is visible.
(function () {
  // the translations of Django's JavaScript catalog (/jsi18n/, loaded before this file)
  var _ = window.gettext || function (text) { return text; };

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
      cell(row, c.from || _("nobody"));
      cell(row, c.to || _("nobody"));
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
        if (!fig.points || fig.note) {  // no poll yet, or nothing to draw (the server says why)
          el.textContent = "";
          var note = document.createElement("p");
          note.className = "muted";
          note.textContent = fig.note || empty;
          el.appendChild(note);
          if (fig.changes) listChanges(fig.changes);
          return;
        }
        Plotly.react(el, fig.data, fig.layout, window.chartConfig());
        el.dataset.points = fig.points;
        if (fig.changes) {
          el.dataset.total = fig.total;
          listChanges(fig.changes);
        }
      });
  }

  function drawAll() {
    draw("lag-chart", _("No history yet: points appear as polls are recorded."));
    draw("allocation-chart", _("No history yet: changes appear as polls are recorded."));
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    setInterval(drawAll, 60000);
  });
})();
