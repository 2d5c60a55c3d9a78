// Pause htmx polling while the tab is hidden: every element polled with
// hx-trigger="every Ns [!document.hidden]" skips its turn, and on return we refresh at once.
document.addEventListener("visibilitychange", function () {
  if (!document.hidden) {
    document.querySelectorAll("[data-refresh-on-visible]").forEach(function (el) {
      htmx.trigger(el, "refresh");
    });
  }
});
