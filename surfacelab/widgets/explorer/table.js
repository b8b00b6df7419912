// The explorer's item table in the browser: one page of rows, drawn from what the kernel sends (the columns, the
// page's cells, where the page starts, how many rows pass the filters). The kernel holds the whole table; it sorts,
// searches and pages it. What the person does here -- a page, a page size, a header click, search words, a row
// click -- goes to the kernel as a message; no trait is ever set from here, so no value can go back and forth
// between the two (a row click opens its item once, whatever the load).
//
// Cells are text (textContent), never markup. The table is as wide as its box (fixed layout, each column a share
// of the width by its kind, long cells cut with an ellipsis and whole in their tooltip); where the columns cannot
// keep their least widths, the table scrolls sideways inside its box, never the page.

const SIZES = [10, 25, 50, 100];
// share of the width and least width (em) of each kind of column
const WIDTHS = { item: [0.55, 3], short: [1, 4.5], option: [1.5, 5.5], premise: [4.5, 12] };
const SEARCH_MS = 200;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render({ model, el: root }) {
  const box = el("div", "sl-t");
  const top = el("div", "sl-t-top");
  const sizeLabel = el("label", "sl-t-size");
  const size = el("select");
  for (const n of SIZES) size.append(new Option(`${n} rows`, String(n)));
  sizeLabel.append("show ", size);
  const search = el("input", "sl-t-search");
  search.type = "search";
  search.placeholder = "search the id, task, whole premise and options";
  search.setAttribute("aria-label", "search the items");
  top.append(sizeLabel, search);

  const scroll = el("div", "sl-t-scroll");
  const table = el("table", "sl-t-table");
  const cols = el("colgroup");
  const head = el("thead");
  const body = el("tbody");
  table.append(cols, head, body);
  body.dataset.lmSuppressShortcuts = "true"; // Enter, Space and the arrows on a row are the table's, not JupyterLab's
  scroll.append(table);

  const bottom = el("div", "sl-t-bottom");
  const info = el("span", "sl-t-info");
  const pager = el("span", "sl-t-pager");
  const button = (label, title) => {
    const b = el("button", "sl-t-page", label);
    b.type = "button";
    b.title = title;
    return b;
  };
  const firstButton = button("«", "first page");
  const prevButton = button("‹", "previous page");
  const nextButton = button("›", "next page");
  const lastButton = button("»", "last page");
  const pageBox = el("input", "sl-t-page-number");
  pageBox.type = "number";
  pageBox.min = "1";
  pageBox.setAttribute("aria-label", "page");
  const pages = el("span", "sl-t-pages");
  pager.append(firstButton, prevButton, "page ", pageBox, pages, nextButton, lastButton);
  bottom.append(info, pager);
  box.append(top, scroll, bottom);
  root.append(box);

  const send = (msg) => model.send(msg);
  const pageSize = () => model.get("page_size");
  const goTo = (first) => send({ event: "page", first: Math.max(0, first) });

  // --- drawing: several traits of one kernel message draw once
  let queued = false;
  function schedule() {
    if (queued) return;
    queued = true;
    queueMicrotask(() => {
      queued = false;
      draw();
    });
  }

  let drawnColumns = "";
  function drawColumns() {
    const columns = model.get("columns");
    const key = JSON.stringify(columns);
    if (key === drawnColumns) return;
    drawnColumns = key;
    cols.replaceChildren();
    const total = columns.reduce((sum, c) => sum + (WIDTHS[c.kind] || WIDTHS.short)[0], 0) || 1;
    let least = 0;
    for (const c of columns) {
      const [share, min] = WIDTHS[c.kind] || WIDTHS.short;
      const col = el("col");
      col.style.width = `${(100 * share) / total}%`;
      cols.append(col);
      least += min;
    }
    table.style.minWidth = `${least}em`;
  }

  function drawHead() {
    const columns = model.get("columns");
    const [by, direction] = model.get("sort");
    const row = el("tr");
    for (const c of columns) {
      const th = el("th", `sl-c-${c.kind}`, c.name);
      th.title = `sort by ${c.name}`;
      if (c.name === by) {
        th.classList.add(direction === "desc" ? "sl-t-desc" : "sl-t-asc");
        th.setAttribute("aria-sort", direction === "desc" ? "descending" : "ascending");
      }
      th.addEventListener("click", () => send({ event: "sort", column: c.name }));
      row.append(th);
    }
    head.replaceChildren(row);
  }

  function drawBody() {
    const columns = model.get("columns");
    const cells = model.get("cells");
    const positions = model.get("positions");
    const first = model.get("first");
    const selected = model.get("selected");
    // the row that has the keyboard's focus keeps it across a redraw (opening it redraws the page)
    const focused = body.contains(document.activeElement) ? document.activeElement.dataset.k : undefined;
    const rows = [];
    cells.forEach((values, i) => {
      const tr = el("tr");
      tr.dataset.k = String(first + i);
      tr.dataset.item = String(positions[i]);
      tr.tabIndex = 0; // a row opens from the keyboard (Enter or Space) as from a click
      if (first + i === selected) tr.classList.add("selected");
      values.forEach((text, j) => {
        const td = el("td", `sl-c-${(columns[j] || {}).kind || "short"}`, text);
        if (text) td.title = text;
        tr.append(td);
      });
      rows.push(tr);
    });
    if (!rows.length) {
      const tr = el("tr", "sl-t-none");
      const td = el("td", "sl-t-empty", model.get("total") ? "no item passes the filters" : "no items yet");
      td.colSpan = Math.max(1, columns.length);
      tr.append(td);
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    if (focused !== undefined) body.querySelector(`tr[data-k="${focused}"]`)?.focus({ preventScroll: true });
  }

  function drawFoot() {
    const count = model.get("count");
    const total = model.get("total");
    const first = model.get("first");
    const n = pageSize();
    const shown = model.get("cells").length;
    const of = count === total ? "" : ` (filtered from ${total.toLocaleString("en")})`;
    info.textContent = count
      ? `rows ${(first + 1).toLocaleString("en")}–${(first + shown).toLocaleString("en")} of ` +
        `${count.toLocaleString("en")}${of}`
      : `0 rows${of}`;
    const last = Math.max(0, Math.ceil(count / n) - 1);
    const page = Math.floor(first / n);
    if (document.activeElement !== pageBox) pageBox.value = String(page + 1);
    pageBox.max = String(last + 1);
    pages.textContent = ` of ${(last + 1).toLocaleString("en")}`;
    firstButton.disabled = prevButton.disabled = page <= 0;
    nextButton.disabled = lastButton.disabled = page >= last;
    if (String(n) !== size.value) size.value = String(n);
    const words = model.get("search");
    if (document.activeElement !== search && search.value !== words) search.value = words;
  }

  function draw() {
    drawColumns();
    drawHead();
    drawBody();
    drawFoot();
  }

  // --- what the person does, sent to the kernel
  const rowOf = (event) => {
    const tr = event.target instanceof Element ? event.target.closest("tr[data-k]") : null;
    return tr && body.contains(tr) ? tr : null;
  };
  const open = (tr) => send({ event: "click", row: Number(tr.dataset.k), item: Number(tr.dataset.item) });
  body.addEventListener("click", (event) => {
    const tr = rowOf(event);
    if (tr) open(tr);
  });
  // a focused row: Enter or Space opens it, the up and down arrows move to the row above or below
  body.addEventListener("keydown", (event) => {
    const tr = rowOf(event);
    if (!tr || event.altKey || event.ctrlKey || event.metaKey) return;
    const next = { ArrowDown: tr.nextElementSibling, ArrowUp: tr.previousElementSibling }[event.key];
    if (event.key === "Enter" || event.key === " ") open(tr);
    else if (next && next.dataset.k !== undefined) next.focus();
    else return;
    event.preventDefault(); // no page scroll on Space or an arrow, no notebook shortcut
    event.stopPropagation();
  });
  size.addEventListener("change", () => send({ event: "size", size: Number(size.value) }));
  firstButton.addEventListener("click", () => goTo(0));
  prevButton.addEventListener("click", () => goTo(model.get("first") - pageSize()));
  nextButton.addEventListener("click", () => goTo(model.get("first") + pageSize()));
  lastButton.addEventListener("click", () => goTo(Math.max(0, model.get("count") - 1)));
  pageBox.addEventListener("change", () => {
    const page = Math.floor(Number(pageBox.value));
    if (Number.isFinite(page) && page >= 1) goTo((page - 1) * pageSize());
  });
  let typing = null;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => send({ event: "search", text: search.value }), SEARCH_MS);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    clearTimeout(typing);
    send({ event: "search", text: search.value });
  });

  for (const name of ["columns", "cells", "positions", "first", "count", "total", "page_size", "sort", "search",
                      "selected"]) {
    model.on(`change:${name}`, schedule);
  }
  draw();
  return () => clearTimeout(typing);
}

export default { render };
