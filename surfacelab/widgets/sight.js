// SightProbe: tells the kernel whether the view it sits in is within (or near) the visible part of the page.
// The element is handed to render() before it is in the page, so the view around it is looked up once it is.
//
// It also keeps what the person reads in place: views out of sight are redrawn in the background, and when one
// above the visible part of the page changes height, everything below it would move. JupyterLab's windowed
// notebook turns the browser's own scroll anchoring off, so one page-wide keeper (shared by every probe, on
// window) scrolls by the change instead, once per grid row (the views of a row stretch to the same height).

function scrollerOf(el) {
  for (let node = el.parentElement; node; node = node.parentElement) {
    const overflow = getComputedStyle(node).overflowY;
    if ((overflow === "auto" || overflow === "scroll") && node.scrollHeight > node.clientHeight) return node;
  }
  return document.scrollingElement;
}

function anchorKeeper() {
  if (window.__slAnchorKeeper) return window.__slAnchorKeeper;
  const heights = new WeakMap();
  const observer = new ResizeObserver((entries) => {
    const rows = new Map(); // scroller -> Map(row top -> largest height change)
    for (const entry of entries) {
      const view = entry.target;
      const height = view.getBoundingClientRect().height;
      const before = heights.get(view);
      heights.set(view, height);
      if (before === undefined || before === height) continue;
      const scroller = scrollerOf(view);
      const visibleTop = scroller === document.scrollingElement ? 0 : scroller.getBoundingClientRect().top;
      const top = view.getBoundingClientRect().top;
      if (top + before > visibleTop + 1) continue; // not wholly above what is shown: nothing moves under the eye
      const byRow = rows.get(scroller) || new Map();
      const key = Math.round(top);
      const change = height - before;
      if (!byRow.has(key) || Math.abs(change) > Math.abs(byRow.get(key))) byRow.set(key, change);
      rows.set(scroller, byRow);
    }
    for (const [scroller, byRow] of rows) {
      let shift = 0;
      for (const change of byRow.values()) shift += change;
      if (shift) scroller.scrollTop += shift;
    }
  });
  window.__slAnchorKeeper = {
    observe(view) {
      heights.set(view, view.getBoundingClientRect().height);
      observer.observe(view);
    },
    unobserve(view) { observer.unobserve(view); },
  };
  return window.__slAnchorKeeper;
}

function render({ model, el }) {
  let io = null;
  let kept = null;
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
    kept = target;
    anchorKeeper().observe(target);
  }
  attach();
  return () => {
    if (io) io.disconnect();
    if (kept) anchorKeeper().unobserve(kept);
  };
}

export default { render };
