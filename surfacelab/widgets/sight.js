// SightProbe: tells the kernel whether the view it sits in is within (or near) the visible part of the page.
// The element is handed to render() before it is in the page, so the view around it is looked up once it is.
function render({ model, el }) {
  let io = null;
  let tries = 0;
  function report(seen) {
    if (seen !== model.get("in_sight")) {
      model.set("in_sight", seen);
      model.save_changes();
    }
  }
  function attach() {
    const target = el.isConnected ? el.closest(".sl-view") : null;
    if (!target) {
      if (tries++ < 100) setTimeout(attach, 100);
      return;
    }
    io = new IntersectionObserver((entries) => report(entries.some((e) => e.isIntersecting)),
                                  { rootMargin: "200px 0px" });
    io.observe(target);
  }
  attach();
  return () => { if (io) io.disconnect(); };
}

export default { render };
