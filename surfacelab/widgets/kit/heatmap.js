// Token heatmap: plain DOM spans, one delegated mouseover listener, one shared tooltip.
// Data arrives columnar in the `rows` trait (see heatmap.py), so thousands of tokens stay cheap.
// A row's `mode` picks its colour scale: "logprob" (surprisal), "contribution" (DC-PMI share) or
// "attribution" (a premise word's support for the gold); a row with `tips` shows those lines on hover
// instead of the token details, and a `plain` row shows its text as written (no ␣ markers).
// The tooltip lives on <body> with fixed coordinates, clamped to the viewport: never clipped by the
// heatmap's scroll box or by JupyterLab's output area.

const SPACE = "\u2423";

function colour(value, mode) {
  if (value === null || value === undefined || Number.isNaN(value)) return "transparent";
  if (mode === "contribution" || mode === "attribution") {
    const a = Math.min(1, Math.abs(value) / 4) * 0.75;
    return value >= 0 ? `rgba(46, 160, 67, ${a.toFixed(3)})` : `rgba(218, 54, 51, ${a.toFixed(3)})`;
  }
  const a = Math.min(1, -value / 12) * 0.8;   // surprisal: 0 nats clear, 12+ nats full
  return `rgba(230, 120, 20, ${a.toFixed(3)})`;
}

function fmt(x, digits) {
  return x === null || x === undefined || Number.isNaN(x) ? "n/a" : Number(x).toFixed(digits);
}

function visible(tok) {
  return tok.replace(/ /g, SPACE).replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5");
}

function escape(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

const swatches = (mode, values) => values.map((v) =>
  `<span class="sl-legend-swatch" style="background:${colour(v, mode)}"></span>`).join("");
const LEGEND = {
  logprob: `<span class="sl-legend-item"><b>log-prob</b> ${swatches("logprob", [0, -3, -6, -9, -12])}` +
           ` 0 → −12 nats (darker = more surprising)</span>`,
  contribution: `<span class="sl-legend-item"><b>Δ DC-PMI</b> ${swatches("contribution", [-4, -2, 0, 2, 4])}` +
                ` −4 → +4 (green: the premise raises the token)</span>`,
  attribution: `<span class="sl-legend-item sl-legend-attribution"><b>support for the gold</b> ` +
               `${swatches("attribution", [-4, -2, 0, 2, 4])} −4 → +4 nats: the margin lost without the word ` +
               `(green: it helps the gold, red: the other option)</span>`,
};

function legend(box, rows) {
  const modes = [...new Set(rows.map((row) => row.mode))].filter((m) => LEGEND[m]);
  const tokens = rows.some((row) => !row.plain);
  box.innerHTML = modes.map((m) => LEGEND[m]).join("") +
    `<span class="sl-legend-item">${tokens ? SPACE + " = space · \u21b5 = newline · " : ""}hover a ` +
    `${tokens ? "token" : "word"}</span>`;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "sl-heatmap-root";
  const body = document.createElement("div");
  body.className = "sl-heatmap-body";
  const tip = document.createElement("div");
  tip.className = "sl-heatmap-tip";
  tip.style.display = "none";
  document.body.appendChild(tip);
  const key = document.createElement("div");
  key.className = "sl-heatmap-legend";
  root.append(key, body);
  el.appendChild(root);
  let rows = [];

  function draw() {
    rows = model.get("rows") || [];
    legend(key, rows);
    const frag = document.createDocumentFragment();
    const limit = model.get("max_tokens");
    let shown = 0;
    rows.forEach((row, r) => {
      const line = document.createElement("div");
      line.className = "sl-heatmap-row sl-heatmap-" + row.mode;
      const label = document.createElement("span");
      label.className = "sl-heatmap-label";
      label.textContent = row.label;
      label.title = row.label;
      line.appendChild(label);
      const toks = document.createElement("span");
      toks.className = "sl-heatmap-tokens";
      for (let i = 0; i < row.token.length && shown < limit; i++, shown++) {
        const s = document.createElement("span");
        s.className = "sl-tok";
        s.dataset.r = r;
        s.dataset.i = i;
        s.textContent = row.plain ? row.token[i] : visible(row.token[i]);
        if (row.plain && row.value[i] === null) s.classList.add("sl-tok-gap");
        s.style.backgroundColor = colour(row.value[i], row.mode);
        toks.appendChild(s);
      }
      line.appendChild(toks);
      frag.appendChild(line);
    });
    const total = rows.reduce((n, row) => n + row.token.length, 0);
    if (total > shown) {
      const more = document.createElement("div");
      more.className = "sl-heatmap-more";
      more.textContent = `… ${total - shown} more tokens not drawn (max_tokens = ${limit})`;
      frag.appendChild(more);
    }
    body.replaceChildren(frag);
    tip.style.display = "none";
  }

  function place(target) {
    // below the token if it fits, else above; never past the viewport's edges
    const r = target.getBoundingClientRect();
    const w = tip.offsetWidth, h = tip.offsetHeight, vw = window.innerWidth, vh = window.innerHeight, pad = 6;
    let left = Math.min(Math.max(pad, r.left), vw - w - pad);
    let top = r.bottom + 4;
    if (top + h > vh - pad) top = r.top - h - 4;
    top = Math.min(Math.max(pad, top), vh - h - pad);
    tip.style.left = `${Math.max(pad, left)}px`;
    tip.style.top = `${Math.max(pad, top)}px`;
  }

  body.addEventListener("mouseover", (ev) => {
    const s = ev.target.closest ? ev.target.closest(".sl-tok") : null;
    if (!s) { tip.style.display = "none"; return; }
    const row = rows[+s.dataset.r], i = +s.dataset.i;
    if (row.tips) {
      const lines = row.tips[i];
      if (!lines) { tip.style.display = "none"; return; }
      tip.innerHTML = `<div class="sl-tip-head">${escape(row.token[i])}</div>` +
        lines.map((line) => `<div>${escape(line)}</div>`).join("");
      tip.style.display = "block";
      place(s);
      return;
    }
    const alts = (row.alternatives[i] || [])
      .map(([t, lp]) => `<tr><td>${escape(visible(t))}</td><td>${fmt(lp, 2)}</td></tr>`).join("");
    tip.innerHTML =
      `<div class="sl-tip-head">${escape(visible(row.token[i]))} <span>id ${row.token_id[i]}</span></div>` +
      `<div>log-prob <b>${fmt(row.logprob[i], 3)}</b> · rank ${row.rank[i]} · ` +
      (model.get("has_entropy") ? `entropy ${fmt(row.entropy[i], 2)}` : "entropy not available from this backend") +
      `</div>` +
      `<div>DC-PMI contribution <b>${fmt(row.contribution[i], 3)}</b></div>` +
      (alts ? `<table class="sl-tip-alts"><tr><th>top alternatives</th><th>log-prob</th></tr>${alts}</table>` : "");
    tip.style.display = "block";
    place(s);
  });
  root.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  const hide = () => { tip.style.display = "none"; };
  window.addEventListener("scroll", hide, true);

  model.on("change:rows", draw);
  draw();
  return () => {
    model.off("change:rows", draw);
    window.removeEventListener("scroll", hide, true);
    tip.remove();
  };
}

export default { render };
