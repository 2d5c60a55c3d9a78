// Draws the statistics charts: each [data-charts] container names a JSON URL whose "figures"
// are plotly figures built by the server; each [data-figure] child gets the one it names.
(function () {
  // the translations of Django's JavaScript catalog (/jsi18n/, loaded before this file)
  var _ = window.gettext || function (text) { return text; };

  function draw(container) {
    fetch(container.dataset.charts, { credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (answer) {
        if (!answer.ok) {
          container.textContent = answer.body.error || _("The statistics could not be read.");
          return;
        }
        container.querySelectorAll("[data-figure]").forEach(function (el) {
          var fig = answer.body.figures[el.dataset.figure];
          if (!fig) return;
          if (!fig.points) {
            el.innerHTML = "";
            var note = document.createElement("p");
            note.className = "muted";
            note.textContent = _("No statistics for this period yet: the nightly job computes each day after it ends.");
            el.appendChild(note);
            return;
          }
          Plotly.react(el, fig.data, fig.layout, window.chartConfig());
          el.dataset.points = fig.points;
        });
        container.dataset.drawn = "true";
      });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-charts]").forEach(draw);
  });
})();
