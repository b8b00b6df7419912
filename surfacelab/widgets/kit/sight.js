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

// After "run all", JupyterLab leaves the page at the last cell, below the workbench. Once per workbench: when no
// cell is running any more (no "[*]" prompt for three checks in a row, so after JupyterLab's own last scroll), bring
// the workbench's top into view, unless the person scrolled, clicked or typed since it appeared.
function revealAfterRun(bench) {
  // beside an explorer the page opens on the explorer: its rows bring the workbench into view when clicked
  if (bench.dataset.slRevealed || document.querySelector(".sl-explorer")) return;
  bench.dataset.slRevealed = "1";
  let touched = false;
  const touch = () => { touched = true; };
  const events = ["wheel", "mousedown", "keydown", "touchstart"];
  for (const name of events) window.addEventListener(name, touch, { capture: true, once: true });
  let idle = 0;
  let checks = 0;
  const timer = setInterval(() => {
    const running = [...document.querySelectorAll(".jp-InputPrompt")].some((p) => p.textContent.includes("*"));
    idle = running ? 0 : idle + 1;
    if (touched || !bench.isConnected || idle >= 3 || ++checks > 1200) {
      clearInterval(timer);
      for (const name of events) window.removeEventListener(name, touch, { capture: true });
      if (touched || !bench.isConnected || idle < 3) return;
      const scroller = scrollerOf(bench);
      const top = scroller === document.scrollingElement ? 0 : scroller.getBoundingClientRect().top;
      if (Math.abs(bench.getBoundingClientRect().top - top) > 2) bench.scrollIntoView({ block: "start" });
    }
  }, 250);
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
    const bench = target.closest(".sl-workbench");
    if (bench) revealAfterRun(bench);
  }
  attach();
  return () => {
    if (io) io.disconnect();
    if (kept) anchorKeeper().unobserve(kept);
  };
}

export default { render };
