// The run report's flipped items and item table (page.py): drawn from the JSON in #sl-r-data a page of rows at a
// time, with search, filters and sort. Text from the data is only ever set as textContent: no markup is built
// from it.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("sl-r-data").textContent);
  const items = data.items;
  const n = items.id.length;
  const PAGE = 100;
  const FLIP_PAGE = 25;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function visible(option) {  // a leading space shown as ␣, as the workbench shows options
    return option.replace(/^ /, "␣");
  }

  function pickText(col, i) {
    const p = col.pick[i];
    const mark = col.right[i] === "1" ? "✓" : "✗";
    return p >= 0 && p < items.options[i].length ? mark + " " + items.options[i][p] : mark;
  }

  // ---------------------------------------------------------------- one item's details (flipped list, a row click)
  function details(i, why) {
    const box = el("div", "sl-r-item");
    const head = el("div", "sl-r-item-head");
    head.append(el("b", null, "item " + items.id[i]));
    if (items.task) head.append(el("span", "sl-r-tag", items.task[i]));
    box.append(head, el("div", "sl-r-premise", items.premise[i]));
    const list = el("ol", "sl-r-options");
    items.options[i].forEach(function (option, k) {
      const li = el("li", k === items.gold[i] ? "sl-r-gold" : "");
      li.append(el("code", null, (k === items.gold[i] ? "★ " : "") + visible(option)));
      const who = data.items.columns.filter(function (c) { return c.pick[i] === k; }).map(function (c) {
        return c.name;
      });
      if (who.length) li.append(el("span", "sl-r-who", " picked by " + who.join(", ")));
      list.append(li);
    });
    box.append(list);
    const marks = el("div", "sl-r-marks");
    data.items.columns.forEach(function (c) {
      marks.append(el("span", c.right[i] === "1" ? "sl-r-right" : "sl-r-wrong",
                      c.name + (c.right[i] === "1" ? " ✓" : " ✗")));
    });
    box.append(marks);
    Object.keys(why || {}).forEach(function (run) {
      box.append(el("p", "sl-r-why", (Object.keys(why).length > 1 ? run + ": " : "") + why[run]));
    });
    return box;
  }

  function pager(at, total, size, go) {
    const bar = el("div", "sl-r-pager");
    const prev = el("button", null, "← previous");
    const next = el("button", null, "next →");
    prev.disabled = at === 0;
    next.disabled = at + size >= total;
    prev.addEventListener("click", function () { go(Math.max(0, at - size)); });
    next.addEventListener("click", function () { go(at + size); });
    const last = Math.min(total, at + size);
    bar.append(prev, el("span", "sl-r-where", total ? (at + 1) + "–" + last + " of " + total : "none"), next);
    return bar;
  }

  // ---------------------------------------------------------------- the flipped items
  const flipBox = document.getElementById("sl-r-flipped");
  function drawFlipped(at) {
    flipBox.replaceChildren();
    const page = data.flipped.slice(at, at + FLIP_PAGE);
    flipBox.append(pager(at, data.flipped.length, FLIP_PAGE, drawFlipped));
    page.forEach(function (f) { flipBox.append(details(f.item, f.why)); });
    if (page.length) flipBox.append(pager(at, data.flipped.length, FLIP_PAGE, drawFlipped));
  }
  drawFlipped(0);

  // ---------------------------------------------------------------- the item table
  const whyOf = {};
  data.flipped.forEach(function (f) { whyOf[f.item] = f.why; });
  const box = document.getElementById("sl-r-items");
  const controls = el("div", "sl-r-controls");
  const search = el("input", "sl-r-search");
  search.type = "search";
  search.placeholder = "search id, premise, options";
  controls.append(search);

  function choice(label, values) {
    const select = el("select");
    select.append(el("option", null, label));
    select.options[0].value = "";
    values.forEach(function (v) { const o = el("option", null, v); o.value = v; select.append(o); });
    controls.append(select);
    return select;
  }
  const firstRun = data.items.runs[0];
  const labelSelect = firstRun.why ? choice("every label", Array.from(new Set(firstRun.why)).sort()) : null;
  const taskSelect = items.task ? choice("every task", Array.from(new Set(items.task)).sort()) : null;
  const rightSelect = choice("any column right", data.columns.map(function (c) { return c + " ✓"; }));
  const wrongSelect = choice("any column wrong", data.columns.map(function (c) { return c + " ✗"; }));
  const flippedOnly = el("label", "sl-r-check");
  const flippedBox = el("input");
  flippedBox.type = "checkbox";
  flippedOnly.append(flippedBox, document.createTextNode(" flipped only"));
  controls.append(flippedOnly);
  const count = el("span", "sl-r-count");
  controls.append(count);
  box.append(controls);

  const heads = [["#", function (i) { return i; }], ["id", function (i) { return items.id[i]; }]];
  if (items.task) heads.push(["task", function (i) { return items.task[i]; }]);
  heads.push(["premise", function (i) { return items.premise[i]; }],
             ["gold", function (i) { return items.options[i][items.gold[i]] || ""; }]);
  data.items.columns.forEach(function (c) {
    heads.push([c.name, function (i) { return pickText(c, i); }]);
  });
  data.items.runs.forEach(function (r) {
    const prefix = data.items.runs.length > 1 ? r.name + ":" : "";
    heads.push([prefix + "margin", function (i) { return r.margin[i]; }, true]);
    if (r.why) heads.push([prefix + "why", function (i) { return r.why[i]; }]);
  });

  const table = el("table", "sl-r-table sl-r-items");
  const thead = el("thead");
  const headRow = el("tr");
  const tbody = el("tbody");
  let sortBy = 0, sortDown = false, rows = [], at = 0;
  heads.forEach(function (h, k) {
    const th = el("th", null, h[0]);
    th.title = "sort";
    th.addEventListener("click", function () {
      sortDown = sortBy === k ? !sortDown : false;
      sortBy = k;
      apply();
    });
    headRow.append(th);
  });
  thead.append(headRow);
  table.append(thead, tbody);
  const top = el("div");
  const bottom = el("div");
  box.append(top, el("div", "sl-r-scroll"), bottom);
  box.children[2].append(table);

  const hay = [];
  for (let i = 0; i < n; i++) {
    hay.push((items.id[i] + " " + items.premise[i] + " " + items.options[i].join(" ")).toLowerCase());
  }
  function column(name) { return data.items.columns.find(function (c) { return c.name === name; }); }

  function apply() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const label = labelSelect ? labelSelect.value : "";
    const task = taskSelect ? taskSelect.value : "";
    const right = rightSelect.value ? column(rightSelect.value.slice(0, -2)) : null;
    const wrong = wrongSelect.value ? column(wrongSelect.value.slice(0, -2)) : null;
    rows = [];
    for (let i = 0; i < n; i++) {
      if (label && firstRun.why[i] !== label) continue;
      if (task && items.task[i] !== task) continue;
      if (right && right.right[i] !== "1") continue;
      if (wrong && wrong.right[i] !== "0") continue;
      if (flippedBox.checked && !(i in whyOf)) continue;
      if (words.length && !words.every(function (w) { return hay[i].indexOf(w) >= 0; })) continue;
      rows.push(i);
    }
    const key = heads[sortBy][1];
    const numeric = sortBy === 0 || heads[sortBy][2];
    rows.sort(function (a, b) {
      let x = key(a), y = key(b);
      if (numeric) {
        x = x === null ? Infinity : x;
        y = y === null ? Infinity : y;
      }
      const order = x < y ? -1 : x > y ? 1 : a - b;
      return sortDown ? -order : order;
    });
    count.textContent = rows.length + " of " + n + " items";
    draw(0);
  }

  function draw(from) {
    at = from;
    tbody.replaceChildren();
    rows.slice(at, at + PAGE).forEach(function (i) {
      const tr = el("tr");
      tr.dataset.item = String(i);
      heads.forEach(function (h, k) {
        const v = h[1](i);
        const td = el("td", h[0] === "premise" ? "sl-r-cut" : "", v === null ? "–" : v);
        if (h[0] === "premise") td.title = items.premise[i];
        if (typeof v === "string" && v.charAt(0) === "✓") td.className = "sl-r-right";
        if (typeof v === "string" && v.charAt(0) === "✗") td.className = "sl-r-wrong";
        tr.append(td);
      });
      tr.addEventListener("click", function () {
        const open = tr.nextSibling && tr.nextSibling.classList.contains("sl-r-detail");
        if (open) { tr.nextSibling.remove(); return; }
        const detail = el("tr", "sl-r-detail");
        const td = el("td");
        td.colSpan = heads.length;
        td.append(details(i, whyOf[i]));
        detail.append(td);
        tr.after(detail);
      });
      tbody.append(tr);
    });
    top.replaceChildren(pager(at, rows.length, PAGE, draw));
    bottom.replaceChildren(pager(at, rows.length, PAGE, draw));
  }

  [search, labelSelect, taskSelect, rightSelect, wrongSelect, flippedBox].forEach(function (c) {
    if (c) c.addEventListener(c === search ? "input" : "change", apply);
  });
  apply();
})();
