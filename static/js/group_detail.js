// Draws the lag chart from the group's lag.json (a plotly figure built by the server) and
// redraws it every minute while the tab is visible.
(function () {
  function draw() {
    var el = document.getElementById("lag-chart");
    if (!el || document.hidden) return;
    fetch(el.dataset.url, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (fig) {
        if (!fig.points) {
          el.innerHTML = '<p class="muted">No history yet: points appear as polls are recorded.</p>';
          return;
        }
        Plotly.react(el, fig.data, fig.layout, { displaylogo: false, responsive: true });
        el.dataset.points = fig.points;
      });
  }
  document.addEventListener("DOMContentLoaded", function () {
    draw();
    setInterval(draw, 60000);
  });
})();
