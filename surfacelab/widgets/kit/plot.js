// PlotView: Plotly.react on one element per view; plotly.js loaded once per page from the kernel.

const KEY = "__surfacelabPlotly";

function loadPlotly(model) {
  const g = globalThis;
  if (g[KEY] && g[KEY].lib) return Promise.resolve(g[KEY].lib);
  if (g[KEY] && g[KEY].promise) return g[KEY].promise;
  const state = (g[KEY] = {});
  state.promise = new Promise((resolve, reject) => {
    const onMsg = (msg, buffers) => {
      if (!msg || msg.kind !== "plotly-js") return;
      model.off("msg:custom", onMsg);
      try {
        const buf = buffers[0];
        const bytes = buf instanceof DataView ? new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)
          : new Uint8Array(buf);
        const source = new TextDecoder().decode(bytes);
        // the bundle is UMD: give it a CommonJS `module` so it neither looks for AMD nor sets a global
        const module = { exports: {} };
        new Function("module", "exports", "define", source)(module, module.exports, undefined);
        state.lib = module.exports;
        resolve(state.lib);
      } catch (err) {
        g[KEY] = undefined;
        reject(err);
      }
    };
    model.on("msg:custom", onMsg);
    model.send({ kind: "need-plotly" });
  });
  return state.promise;
}

function cssVar(name, fallback) {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

// Colours from JupyterLab's theme: transparent backgrounds, theme font and grid colours.
function themed(layout, width) {
  const fg = cssVar("--jp-ui-font-color1", "#222");
  const fg2 = cssVar("--jp-ui-font-color2", "#555");
  const grid = cssVar("--jp-border-color2", "#e0e0e0");
  const bg = cssVar("--jp-layout-color1", "#fff");
  const out = { ...layout };
  out.paper_bgcolor = "rgba(0,0,0,0)";
  out.plot_bgcolor = "rgba(0,0,0,0)";
  out.font = { ...(layout.font || {}), color: fg };
  out.hoverlabel = { bgcolor: bg, bordercolor: grid, font: { color: fg } };
  out.legend = { ...(layout.legend || {}), font: { color: fg } };
  for (const key of Object.keys(out)) {
    if (/^[xy]axis\d*$/.test(key)) {
      out[key] = { gridcolor: grid, zerolinecolor: grid, linecolor: grid, tickcolor: grid, ...out[key],
        tickfont: { color: fg2, ...((out[key] || {}).tickfont || {}) } };
    }
  }
  if (width > 0) out.width = width;
  out.autosize = false;
  return out;
}

function render({ model, el }) {
  const div = document.createElement("div");
  div.className = "sl-plot-area";
  el.appendChild(div);
  let inSight = false;
  let pending = true;
  let drawing = Promise.resolve();
  let lib = null;

  function width() {
    return Math.floor(el.getBoundingClientRect().width);
  }

  async function draw() {
    const fig = model.get("figure") || {};
    const revision = model.get("revision");
    if (model.get("lazy") && !inSight) {
      // keep the figure's height while it waits: an empty box of no height at the edge of a scrolled panel is
      // never seen to intersect, and the page would jump when it is drawn
      const height = fig.layout && fig.layout.height;
      div.style.minHeight = height ? `${height}px` : "";
      pending = true;
      return;
    }
    pending = false;
    div.style.minHeight = "";
    if (!fig.data || !fig.layout) {
      if (lib) lib.purge(div);
      div.replaceChildren();
      div.dataset.slRevision = String(revision);
      el.dataset.slRevision = String(revision);
      return;
    }
    const asked = performance.now();
    lib = await loadPlotly(model);
    const began = performance.now();
    await lib.react(div, fig.data, themed(fig.layout, width()),
      { displaylogo: false, responsive: false, modeBarButtonsToRemove: ["select2d", "lasso2d"] });
    div.dataset.slRevision = String(revision);
    el.dataset.slRevision = String(revision);
    // the kernel's "where the time went" counts the drawing (and the wait for plotly.js, once a page)
    model.send({ kind: "drawn", revision, ms: performance.now() - began, wait_ms: began - asked });
  }

  function schedule() {
    drawing = drawing.then(draw).catch((err) => {
      div.textContent = `plot failed: ${err}`;
    });
  }

  const io = new IntersectionObserver((entries) => {
    inSight = entries.some((e) => e.isIntersecting);
    if (inSight && pending) schedule();
  }, { rootMargin: "300px 0px" });
  io.observe(el);

  let lastWidth = 0;
  let resizeTimer = null;
  const ro = new ResizeObserver(() => {
    const w = width();
    if (!lib || !w || Math.abs(w - lastWidth) < 2) return;
    lastWidth = w;
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (div.data) lib.relayout(div, { width: width() });
    }, 80);
  });
  ro.observe(el);

  // JupyterLab switches themes by changing attributes on <body>
  const mo = new MutationObserver(() => schedule());
  mo.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });

  model.on("change:revision", schedule);
  schedule();
  // plotly.js is read once per page: read it while the page is idle, not on the first figure (a run's first rows)
  const idle = globalThis.requestIdleCallback || ((f) => setTimeout(f, 200));
  idle(() => loadPlotly(model).catch(() => {}));
  return () => {
    model.off("change:revision", schedule);
    io.disconnect();
    ro.disconnect();
    mo.disconnect();
    if (lib) lib.purge(div);
  };
}

export default { render };
