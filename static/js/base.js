// Pause htmx polling while the tab is hidden: a polled element's request is cancelled while
// the tab is hidden, and on return we refresh at once. (Done here rather than with an htmx
// trigger filter, which htmx evaluates with eval: the Content-Security-Policy forbids it.)
document.addEventListener("htmx:confirm", function (event) {
  if (document.hidden && event.detail.elt.hasAttribute("data-refresh-on-visible")) {
    event.preventDefault();
  }
});
document.addEventListener("visibilitychange", function () {
  if (!document.hidden) {
    document.querySelectorAll("[data-refresh-on-visible]").forEach(function (el) {
      htmx.trigger(el, "refresh");
    });
  }
});
// A box marked data-swap-errors shows error answers too (a 502 "broker: ..." in the reset
// preview): htmx leaves the last answer standing otherwise, a plan of the strategy chosen before.
document.addEventListener("htmx:beforeSwap", function (event) {
  if (event.detail.isError && event.detail.target.hasAttribute("data-swap-errors")) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
// The config of every chart on the pages: plotly's locale of the page's language (month names,
// date order, the mode bar's tooltips), handed over by the {% plotly_locale %} tag, registered
// once plotly has loaded.
window.chartConfig = function () {
  var config = { displaylogo: false, responsive: true };
  var source = document.getElementById("plotly-locale");
  if (source && window.Plotly) {
    var locale = JSON.parse(source.textContent);
    if (!window.chartConfig.registered) {
      Plotly.register(locale);
      window.chartConfig.registered = true;
    }
    config.locale = locale.name;
  }
  return config;
};
