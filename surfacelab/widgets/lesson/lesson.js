// The lesson page (lesson_page.py): one page of the file shown at a time (#lesson, #item-3), previous / next and
// the list; a page's figures and heatmaps are drawn the first time it is shown, from the JSON in its
// <script class="sl-page-data">. Figures in a folded <details> are drawn when it opens (plotly needs a width).
// The heatmaps use the workbench's own heatmap.js (an anywidget module, imported once from its text) with a
// model that only answers `get`. plotly.js (4.8 MB) is read from its text after the first paint, so the page's
// tables, words and heatmaps show while it loads; the figures follow.
// window.slLesson records, per page, the milliseconds since navigation start when its text and heatmaps were shown
// (`shown`) and when every figure was drawn too (`drawn`; the page then carries data-drawn="1"): the tests read them.
(function () {
  "use strict";
  const pages = Array.from(document.querySelectorAll(".sl-page"));
  const links = Array.from(document.querySelectorAll(".sl-lesson-nav a[data-page]"));
  const state = { shown: {}, drawn: {}, heatmap: null, plotly: null, started: performance.now() };
  window.slLesson = state;

  function heatmapModule() {
    if (!state.heatmap) {
      const source = document.getElementById("sl-heatmap-js").textContent;
      const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
      state.heatmap = import(url).then((m) => m.default);
    }
    return state.heatmap;
  }

  function plotly() {
    // after the next paint: the classic script sets window.Plotly when it runs
    if (!state.plotly) {
      state.plotly = new Promise((resolve) => requestAnimationFrame(() => setTimeout(() => {
        const holder = document.getElementById("sl-plotly-js");
        const script = document.createElement("script");
        script.textContent = holder.textContent;
        holder.remove();
        document.body.appendChild(script);
        resolve(window.Plotly);
      }, 0)));
    }
    return state.plotly;
  }

  function model(data) {
    // what heatmap.js asks of an anywidget model: the rows and settings, and change events (none here)
    return { get: (key) => data[key], on() {}, off() {} };
  }

  async function drawFigure(el, data) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    const fig = data.figures[+el.dataset.figure];
    const lib = await plotly();
    await lib.newPlot(el, fig.data, { ...fig.layout, autosize: true }, { displaylogo: false, responsive: true });
  }

  function unfolded(el) {
    const folded = el.closest("details");
    return !folded || folded.open;
  }

  async function draw(page) {
    if (page.dataset.started) return;
    page.dataset.started = "1";
    const data = JSON.parse(page.querySelector("script.sl-page-data").textContent);
    page.querySelectorAll("details").forEach((d) => d.addEventListener("toggle", () => {
      if (d.open) d.querySelectorAll("[data-figure]").forEach((el) => drawFigure(el, data));
    }));
    const maps = page.querySelectorAll("[data-heatmap]");
    if (maps.length) {
      const heatmap = await heatmapModule();
      maps.forEach((el) => heatmap.render({ model: model(data.heatmaps[+el.dataset.heatmap]), el }));
    }
    state.shown[page.dataset.page] = performance.now();
    const figures = Array.from(page.querySelectorAll("[data-figure]")).filter(unfolded);
    await Promise.all(figures.map((el) => drawFigure(el, data)));
    page.dataset.drawn = "1";
    state.drawn[page.dataset.page] = performance.now();
  }

  function show(id) {
    const page = pages.find((p) => p.dataset.page === id) || pages[0];
    if (!page) return;
    pages.forEach((p) => { p.hidden = p !== page; });
    links.forEach((a) => a.classList.toggle("sl-current", a.dataset.page === page.dataset.page));
    const current = links.find((a) => a.dataset.page === page.dataset.page);
    if (current && current.scrollIntoView) current.scrollIntoView({ block: "nearest" });
    window.scrollTo(0, 0);
    draw(page).catch((err) => {
      const note = document.createElement("p");
      note.className = "sl-error";
      note.textContent = "this page could not be drawn: " + err;
      page.prepend(note);
    });
  }

  window.addEventListener("hashchange", () => show(decodeURIComponent(location.hash.slice(1))));
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
    const selector = { ArrowRight: "a.sl-next", ArrowLeft: "a.sl-prev" }[ev.key];
    const shown = pages.find((p) => !p.hidden);
    const link = selector && shown && shown.querySelector(selector);
    if (link) location.hash = link.getAttribute("href");
  });
  show(decodeURIComponent(location.hash.slice(1)));
})();
