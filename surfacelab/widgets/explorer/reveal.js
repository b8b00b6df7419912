// Reveal: a click in the explorer that opens an item (a row of its item table, or an element marked
// `sl-opens-item`) scrolls the workbench the item opens in into view at once, in the browser.
//
// Why here and not in the kernel: the workbench computes the views in sight first and defers the others (its
// sight probes say which). Below the explorer, every view is out of sight when the row is clicked. So the click is
// held back, the workbench scrolled to, and the click replayed after two frames: by then the probes have told the
// kernel which views are in sight, and the item's update computes those first. A workbench not on the page yet
// (the explorer makes its own on the first click) is scrolled to when it appears; one that never appears (given
// to the explorer but not displayed) is reported through `missing`.

const OPENERS = ".sl-item-table tbody tr[data-k], .sl-opens-item";

function scrollerOf(el) {
  for (let node = el.parentElement; node; node = node.parentElement) {
    const overflow = getComputedStyle(node).overflowY;
    if ((overflow === "auto" || overflow === "scroll") && node.scrollHeight > node.clientHeight) return node;
  }
  return document.scrollingElement;
}

// The workbench's top at the top of the notebook's visible area (nothing to do when it is there already).
function bringIntoView(bench) {
  const scroller = scrollerOf(bench);
  const top = scroller === document.scrollingElement ? 0 : scroller.getBoundingClientRect().top;
  if (Math.abs(bench.getBoundingClientRect().top - top) > 2) bench.scrollIntoView({ block: "start" });
  bench.dataset.slRevealedAt = String(performance.now()); // read by the browser tests and benchmark
}

function render({ model, el }) {
  let root = null;
  let tries = 0;
  let waiting = null;

  const bench = () => {
    const cls = model.get("target");
    return cls ? document.querySelector("." + cls) : null;
  };

  // No workbench on the page yet: scroll to it when it appears, unless the person scrolls or clicks meanwhile.
  function whenItAppears() {
    if (waiting) clearInterval(waiting);
    const start = performance.now();
    let touched = false;
    const touch = () => { touched = true; };
    const events = ["wheel", "mousedown", "keydown", "touchstart"];
    setTimeout(() => { for (const name of events) window.addEventListener(name, touch, { capture: true, once: true }); });
    waiting = setInterval(() => {
      const found = bench();
      const waited = performance.now() - start;
      if (found || touched || waited > model.get("wait_ms")) {
        clearInterval(waiting);
        waiting = null;
        for (const name of events) window.removeEventListener(name, touch, { capture: true });
        if (found && !touched) bringIntoView(found);
        if (!found && !touched && !model.get("missing")) {
          model.set("missing", true);
          model.save_changes();
        }
      }
    }, 100);
  }

  function onClick(event) {
    if (event.slReplayed || !(event.target instanceof Element)) return;
    const opener = event.target.closest(OPENERS);
    if (!opener || !root.contains(opener)) return;
    const found = bench();
    if (!found) {
      whenItAppears();
      return; // the click goes on as it is: the kernel makes the workbench
    }
    event.stopPropagation();
    event.preventDefault();
    bringIntoView(found);
    let done = false;
    const replay = () => {
      if (done) return;
      done = true;
      const again = new MouseEvent("click", event);
      again.slReplayed = true;
      event.target.dispatchEvent(again);
    };
    // two frames: the sight probes' IntersectionObservers run after the first, their messages leave before the
    // click's; a hidden tab runs no frames, hence the timer
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(replay, 0)));
    setTimeout(replay, 250);
  }

  function attach() {
    root = el.isConnected ? el.closest(".sl-explorer") : null;
    if (!root) {
      if (tries++ < 100) setTimeout(attach, 100);
      return;
    }
    root.addEventListener("click", onClick, true);
  }
  attach();
  return () => {
    if (root) root.removeEventListener("click", onClick, true);
    if (waiting) clearInterval(waiting);
  };
}

export default { render };
