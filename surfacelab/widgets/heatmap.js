// Token heatmap: plain DOM spans, one delegated mouseover listener, one shared tooltip.
// Data arrives columnar in the `rows` trait (see heatmap.py), so thousands of tokens stay cheap.
// The tooltip lives on <body> with fixed coordinates, clamped to the viewport: never clipped by the
// heatmap's scroll box or by JupyterLab's output area.

const SPACE = "\u2423";

function colour(value, mode) {
  if (value === null || value === undefined || Number.isNaN(value)) return "transparent";
  if (mode === "contribution") {
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

function legend() {
  const box = document.createElement("div");
  box.className = "sl-heatmap-legend";
  const swatches = (mode, values) => values.map((v) =>
    `<span class="sl-legend-swatch" style="background:${colour(v, mode)}"></span>`).join("");
  box.innerHTML =
    `<span class="sl-legend-item"><b>log-prob</b> ${swatches("logprob", [0, -3, -6, -9, -12])}` +
    ` 0 → −12 nats (darker = more surprising)</span>` +
    `<span class="sl-legend-item"><b>Δ DC-PMI</b> ${swatches("contribution", [-4, -2, 0, 2, 4])}` +
    ` −4 → +4 (green: the premise raises the token)</span>` +
    `<span class="sl-legend-item">${SPACE} = space · \u21b5 = newline · hover a token</span>`;
  return box;
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
  root.append(legend(), body);
  el.appendChild(root);
  let rows = [];

  function draw() {
    rows = model.get("rows") || [];
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
        s.textContent = visible(row.token[i]);
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
