// The clickable graph: Graphviz SVG with pan, zoom, minimap, keyboard; events go to Python.
// Written for onnx_explorer; no network access, no third-party code.
//
// Notebook etiquette: the wheel scrolls the page (Ctrl/⌘+wheel or a pinch zooms), keys
// pressed here stop here, colours follow the JupyterLab theme. Python decides what a
// click means; the browser says which drawn item was hit and on which drawing.

const READABLE = 0.75; // scale at which Graphviz's 10 pt labels are 10 px high on screen
const PT = 4 / 3; // Graphviz sizes are in points; the page in CSS px
const MARGIN = 24; // px kept free around the drawing when anchoring it
const ACK_WAIT = 5000; // ms a message to the kernel may go unanswered before we say so
const MINIMAP_MAX = { width: 180, height: 140 };
// A drawing far taller (or wider) than the minimap is not squeezed into a sliver: the
// minimap keeps at least this width (height), shows the band around the view, and
// follows it.
const MINIMAP_MIN_SIDE = 56;
const HELP =
  "click: select · double-click: open or close (scope, body) · drag: pan · " +
  "Ctrl/⌘+wheel: zoom · / search · Esc: deselect · Enter: open · +/−/0: zoom, fit · arrows: pan";

function button(label, title, onClick, className = "") {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `oxe-graph-button ${className}`.trim();
  b.textContent = label;
  b.title = title;
  b.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick(event);
  });
  return b;
}

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text) e.textContent = text;
  return e;
}

// Parse the SVG as XML and keep only drawing: no scripts, no event handlers, no links out.
function parseSvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.nodeName.toLowerCase() !== "svg" || doc.querySelector("parsererror")) {
    return null;
  }
  for (const bad of svg.querySelectorAll("script, foreignObject, iframe, object, embed")) {
    bad.remove();
  }
  for (const node of svg.querySelectorAll("*")) {
    for (const attribute of Array.from(node.attributes)) {
      const name = attribute.name.toLowerCase();
      if (name.startsWith("on") || name === "href" || name === "xlink:href") {
        node.removeAttribute(attribute.name);
      }
    }
  }
  return document.importNode(svg, true);
}

// A stable key for a drawn item across redraws (synthetic ids are renumbered each time).
function keyOf(entry) {
  if (!entry) return null;
  if (entry.kind === "scope") return `scope:${entry.path}`;
  if (entry.kind === "node") return `node:${entry.name}`;
  if (entry.kind === "fold") return `fold:${entry.fold}:${entry.part}:${entry.open}`;
  if (entry.kind === "input" || entry.kind === "output") return `${entry.kind}:${entry.name}`;
  return null;
}

function download(name, blob) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// -- two panes side by side (widgets/_compare_view.py) ---------------------------------
// ``marks``: drawn id → a word; the drawn item gets the class oxe-mark-<word> (a node
// with no counterpart on the other side; the nodes linked with the selection, 1↔N).
const MARK_WORDS = ["unmatched", "related"];
const CENTRE_WAIT = 30_000; // ms a request to centre a node not drawn yet is kept
function showMarks(model, stage) {
  for (const word of MARK_WORDS) {
    for (const old of stage.querySelectorAll(`.oxe-mark-${word}`)) old.classList.remove(`oxe-mark-${word}`);
  }
  const marks = model.get("marks") || {};
  for (const [id, word] of Object.entries(marks)) {
    if (!MARK_WORDS.includes(word)) continue;
    const node = stage.querySelector(`g[id="${CSS.escape(id)}"]`);
    if (node) node.classList.add(`oxe-mark-${word}`);
  }
}

// ``view_move``: the last pan or zoom made here by hand, as the map of the screen it
// applied ({origin, n, k, ox, oy}: screen' = k·screen + (ox, oy)). A compare view links
// two panes' view_move in the browser (ipywidgets jslink, no kernel in between): each
// pane applies the other's moves, never its own (origin), and a move applied here is not
// a move made here, so nothing echoes back. Moves made by code (centring a selection, a
// new drawing placed) are not sent: only those inside a pointer, wheel, key or button
// event, measured from just before the event to the next frame.
function linkView(model, el, view) {
  const origin = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  let count = 0;
  let before = null;
  let frame = null;
  const finite = (v) => typeof v === "number" && Number.isFinite(v);
  const check = () => {
    frame = null;
    const after = view.get();
    const start = before;
    before = null;
    if (!start || (after.scale === start.scale && after.tx === start.tx && after.ty === start.ty)) return;
    const k = after.scale / start.scale;
    count += 1;
    model.set("view_move", { origin, n: count, k, ox: after.tx - k * start.tx, oy: after.ty - k * start.ty });
  };
  const gesture = () => {
    if (frame !== null) return; // one measure per frame: a drag's moves add up
    before = view.get();
    frame = requestAnimationFrame(check);
  };
  const received = () => {
    const move = model.get("view_move") || {};
    if (!move.origin || move.origin === origin) return;
    if (![move.k, move.ox, move.oy].every(finite) || move.k <= 0) return;
    const t = view.get();
    view.set({ scale: t.scale * move.k, tx: t.tx * move.k + move.ox, ty: t.ty * move.k + move.oy });
    if (before) before = view.get(); // a gesture in flight here measures from the new place
  };
  const events = ["pointerdown", "pointermove", "pointerup", "wheel", "keydown", "click", "dblclick"];
  for (const name of events) el.addEventListener(name, gesture, { capture: true, passive: true });
  model.on("change:view_move", received);
  return () => {
    for (const name of events) el.removeEventListener(name, gesture, { capture: true });
    model.off("change:view_move", received);
    if (frame !== null) cancelAnimationFrame(frame);
  };
}

// -- folds of repeated blocks: one stepper per fold drawn ("layers.0–31 ×32 ◀ 17 ▶") --
// Python draws the fold (views/_repeats.py); the browser only says which member to show
// ({event: "fold_step"}) or asks for the members' weights compared ({event:
// "fold_compare"}), whose text comes back in ``fold_report``.
function foldBar(model, request) {
  const bar = element("div", "oxe-graph-folds");
  const report = element("pre", "oxe-graph-fold-report");
  const update = () => {
    const folds = model.get("folds") || [];
    bar.replaceChildren();
    bar.style.display = folds.length ? "flex" : "none";
    for (const fold of folds.slice(0, 6)) {
      const labels = Array.isArray(fold.labels) ? fold.labels : [];
      const count = Number(fold.count) || labels.length;
      const index = Number(fold.index) || 0;
      const step = (to) => {
        if (to >= 0 && to < count) request({ event: "fold_step", fold: fold.key, index: to });
      };
      const row = element("span", "oxe-graph-fold");
      row.append(element("span", "oxe-graph-fold-label", `${fold.label} ×${count}`));
      const back = button("◀", "show the block before", () => step(index - 1));
      const next = button("▶", "show the block after", () => step(index + 1));
      back.disabled = index <= 0;
      next.disabled = index >= count - 1;
      const picker = document.createElement("select");
      picker.className = "oxe-graph-fold-pick";
      picker.title = "show this block";
      labels.forEach((label, k) => {
        const option = document.createElement("option");
        option.value = String(k);
        option.textContent = String(label);
        option.selected = k === index;
        picker.append(option);
      });
      picker.addEventListener("change", () => step(Number(picker.value)));
      const compare = button("weights", `compare the weights of the ${count} blocks: which one is the outlier (reads them all)`, () =>
        request({ event: "fold_compare", fold: fold.key, pair: [index === 0 ? 1 : 0, index] }),
      );
      row.append(back, picker, next, compare);
      bar.append(row);
    }
  };
  const showReport = () => {
    const text = model.get("fold_report") || "";
    report.textContent = text;
    report.style.display = text ? "block" : "none";
  };
  update();
  showReport();
  return { bar, report, update, showReport };
}

function render({ model, el }) {
  el.classList.add("oxe-graph");
  // Lumino (JupyterLab, Notebook 7) runs no shortcut for keys pressed inside this element.
  el.setAttribute("data-lm-suppress-shortcuts", "true");

  const toolbar = element("div", "oxe-graph-toolbar");
  const help = element("div", "oxe-graph-help", HELP);
  const viewport = element("div", "oxe-graph-viewport");
  viewport.tabIndex = 0;
  // Lumino matches a shortcut's selector against the focused element itself before it
  // looks for this attribute on ancestors: the focusable pane needs it too (Notebook 7
  // listens in the capture phase, where stopPropagation comes too late).
  viewport.setAttribute("data-lm-suppress-shortcuts", "true");
  viewport.style.height = model.get("height") || "";
  const stage = element("div", "oxe-graph-stage");
  const ring = element("div", "oxe-graph-ring"); // the selection, visible at any zoom
  const minimap = element("div", "oxe-graph-minimap");
  const minimapImage = element("img");
  minimapImage.alt = "";
  minimapImage.draggable = false;
  const minimapFrame = element("div", "oxe-graph-minimap-frame");
  minimap.append(minimapImage, minimapFrame);
  const busy = element("div", "oxe-graph-busy");
  const busyText = element("span");
  busy.append(
    busyText,
    button("Cancel", "stop this layout (its dot process is killed)", () =>
      request({ event: "cancel" }),
    ),
  );
  const legend = element("div", "oxe-graph-legend"); // a numeric overlay's colour bar
  viewport.append(stage, ring, minimap, busy, legend);
  const notes = element("div", "oxe-graph-notes");
  const error = element("div", "oxe-graph-error");
  const status = element("div", "oxe-graph-status");
  const folds = foldBar(model, (message) => request(message));
  el.append(toolbar, folds.bar, folds.report, error, viewport, status, notes, help);

  // Every message to the kernel is answered ({ack: seq}); one left unanswered for
  // ACK_WAIT ms means the kernel is gone (shut down, restarted, a saved notebook
  // reopened): say so, instead of ignoring clicks without a word.
  const offline = element("div", "oxe-graph-offline");
  offline.textContent =
    "The kernel did not answer: it may have stopped. This drawing still pans, zooms and " +
    "finds; run the cell again to explore.";
  offline.style.display = "none";
  el.insertBefore(offline, viewport);
  let sent = 0;
  let answered = 0;
  let waiting = null;
  const request = (message) => {
    sent += 1;
    if (waiting === null) {
      waiting = setTimeout(() => {
        waiting = null;
        if (answered < sent) offline.style.display = "block";
      }, ACK_WAIT);
    }
    try {
      model.send({ ...message, seq: sent });
    } catch (error) {
      // The comm is closed (the kernel was shut down or restarted): say so now.
      offline.style.display = "block";
    }
  };
  model.on("msg:custom", (message) => {
    if (message && typeof message.ack === "number") {
      answered = Math.max(answered, message.ack);
      if (answered >= sent) offline.style.display = "none";
    }
  });

  // -- the view transform: screen = stage * scale + (tx, ty) --------------------------
  let scale = 1;
  let tx = 0;
  let ty = 0;
  let svgSize = { width: 1, height: 1 };
  let svgText = "";
  let shownPath = null; // graph path of the drawing on screen
  const savedViews = new Map(); // graph path → {scale, tx, ty}: breadcrumbs come back here
  let anchor = null; // {key, x, y}: keep this item's top centre there on the next drawing
  let lastClicked = null; // id clicked in the drawing: do not move the view for it
  let picked = null; // a scope picked with one click (browser-side selection)

  const size = () => ({ width: viewport.clientWidth || 600, height: viewport.clientHeight || 400 });
  const apply = () => {
    stage.style.transform = `translate(${tx}px, ${ty}px) scale(${scale})`;
    placeRing();
    placeMinimap();
  };
  const zoomAt = (factor, cx, cy) => {
    const next = Math.min(8, Math.max(0.02, scale * factor));
    tx = cx - ((cx - tx) * next) / scale;
    ty = cy - ((cy - ty) * next) / scale;
    scale = next;
    apply();
  };
  const zoomCentre = (factor) => zoomAt(factor, size().width / 2, size().height / 2);
  const fitScale = () =>
    Math.min(size().width / svgSize.width, size().height / svgSize.height, 1.5);
  const fit = () => {
    scale = fitScale();
    tx = (size().width - svgSize.width * scale) / 2;
    ty = Math.max(0, (size().height - svgSize.height * scale) / 2);
    apply();
  };

  // Where an element of the drawing is, in unscaled stage px.
  const boxOf = (node) => {
    const r = node.getBoundingClientRect();
    const s = stage.getBoundingClientRect();
    return {
      x: (r.left - s.left) / scale,
      y: (r.top - s.top) / scale,
      width: r.width / scale,
      height: r.height / scale,
    };
  };
  const elementFor = (id) => (id ? stage.querySelector(`g[id="${CSS.escape(id)}"]`) : null);
  const findByKey = (key) => {
    const ids = model.get("ids") || {};
    for (const [id, entry] of Object.entries(ids)) {
      if (keyOf(entry) === key) return elementFor(id);
    }
    return null;
  };

  // Readable first view: 100 % anchored at the model's beginning, unless all of it is
  // readable when fitted. The anchor is ONE item (two inputs can be drawn 2,800 px
  // apart, and their midpoint is empty space): the topmost graph input (first in file
  // order on a tie), else — a body or a function has no input items — the topmost node
  // operator or scope box. Whatever the anchor, a pane without such a box is centred on
  // the nearest one.
  const topmost = (boxes) =>
    boxes.reduce((best, b) => (b.y < best.y - 1 || (Math.abs(b.y - best.y) <= 1 && b.x < best.x) ? b : best));
  // Boxes of the drawing's operators and scopes (not the values read from outside a
  // body, drawn as ellipses along its top: a pane of those is still empty).
  const boxesOfKind = (kinds) =>
    Object.entries(model.get("ids") || {})
      .filter(([, entry]) => kinds.includes(entry.kind))
      .map(([id]) => elementFor(id))
      .filter(Boolean)
      .map(boxOf);
  const nodeBoxes = () => boxesOfKind(["node", "scope", "fold"]);
  const boxInPane = (boxes) => {
    const { width, height } = size();
    return boxes.some((b) => {
      const left = b.x * scale + tx;
      const top = b.y * scale + ty;
      return left + b.width * scale > 0 && left < width && top + b.height * scale > 0 && top < height;
    });
  };
  const firstView = () => {
    if (fitScale() >= READABLE) {
      fit();
      return;
    }
    const inputs = boxesOfKind(["input"]); // measured at the current scale, before it changes
    const boxes = nodeBoxes();
    const candidates = inputs.length ? inputs : boxes;
    scale = 1;
    const { width, height } = size();
    if (!candidates.length) {
      tx = (width - svgSize.width * scale) / 2;
      ty = MARGIN;
      apply();
      return;
    }
    const start = topmost(candidates);
    tx = width / 2 - (start.x + start.width / 2) * scale;
    // Never leave the drawing's left edge inside the pane when it is wider than the pane.
    if (svgSize.width * scale > width) tx = Math.min(MARGIN, Math.max(tx, width - MARGIN - svgSize.width * scale));
    else tx = (width - svgSize.width * scale) / 2;
    ty = MARGIN - start.y * scale;
    if (boxes.length && !boxInPane(boxes)) {
      const cx = (width / 2 - tx) / scale;
      const cy = (height / 2 - ty) / scale;
      const distance = (b) => Math.hypot(b.x + b.width / 2 - cx, b.y + b.height / 2 - cy);
      const nearest = boxes.reduce((best, b) => (distance(b) < distance(best) ? b : best));
      tx = width / 2 - (nearest.x + nearest.width / 2) * scale;
      ty = Math.max(MARGIN - nearest.y * scale, height / 2 - (nearest.y + nearest.height / 2) * scale);
    }
    apply();
  };

  // Put a drawn element's centre in the middle of the pane, zooming in to readable.
  const centreOn = (node) => {
    const box = boxOf(node);
    if (scale < READABLE) scale = 1;
    const { width, height } = size();
    tx = width / 2 - (box.x + box.width / 2) * scale;
    ty = height / 2 - (box.y + box.height / 2) * scale;
    apply();
  };
  const visible = (node) => {
    const r = node.getBoundingClientRect();
    const v = viewport.getBoundingClientRect();
    return r.left >= v.left && r.right <= v.right && r.top >= v.top && r.bottom <= v.bottom;
  };

  // -- selection ring and search hits --------------------------------------------------
  function placeRing() {
    const node = elementFor(model.get("highlight_id")) || (picked && elementFor(picked));
    if (!node) {
      ring.style.display = "none";
      return;
    }
    const r = node.getBoundingClientRect();
    const v = viewport.getBoundingClientRect();
    const w = Math.max(r.width, 18);
    const h = Math.max(r.height, 18);
    ring.style.display = "block";
    ring.style.left = `${r.left - v.left + r.width / 2 - w / 2 - 5}px`;
    ring.style.top = `${r.top - v.top + r.height / 2 - h / 2 - 5}px`;
    ring.style.width = `${w + 10}px`;
    ring.style.height = `${h + 10}px`;
  }

  // ``keepPlace``: a new drawing whose placement was already decided (the anchor of an
  // expand, or the same graph redrawn): move only if the selection is out of sight.
  const highlight = (keepPlace = false) => {
    for (const old of stage.querySelectorAll(".oxe-selected")) old.classList.remove("oxe-selected");
    const id = model.get("highlight_id");
    const node = elementFor(id);
    if (node) {
      picked = null;
      node.classList.add("oxe-selected");
      // A node clicked in the drawing is where the user looks: do not move it.
      const stay = keepPlace || id === lastClicked;
      if (!stay || !visible(node)) centreOn(node);
    }
    lastClicked = null;
    placeRing();
  };

  const showMatches = () => {
    for (const old of stage.querySelectorAll(".oxe-match")) old.classList.remove("oxe-match");
    const ids = model.get("matches") || [];
    for (const id of ids) {
      const node = elementFor(id);
      if (node) node.classList.add("oxe-match");
    }
    const total = model.get("match_total") || 0;
    matchInfo.textContent = total ? `${total.toLocaleString()} match${total === 1 ? "" : "es"}` : "";
    for (const b of matchButtons) b.style.display = total ? "" : "none";
  };

  // -- minimap: the whole drawing small, the viewport as a frame; drag to move --------
  let minimapUrl = null;
  let minimapScale = 1;
  let minimapOffset = { x: 0, y: 0 }; // px of the small drawing scrolled out of the box
  function placeMinimap() {
    const { width, height } = size();
    const big = svgSize.width * scale > width + 2 || svgSize.height * scale > height + 2;
    minimap.style.display = svgText && big ? "block" : "none";
    if (!svgText || !big) return;
    const m = minimapScale;
    const left = (-tx / scale) * m;
    const top = (-ty / scale) * m;
    const frameWidth = (width / scale) * m;
    const frameHeight = (height / scale) * m;
    // The band of a very tall (wide) drawing around the view: centre the frame in it.
    const box = { width: minimap.clientWidth, height: minimap.clientHeight };
    const full = { width: svgSize.width * m, height: svgSize.height * m };
    const clamp = (v, most) => Math.max(0, Math.min(v, Math.max(0, most)));
    minimapOffset = {
      x: clamp(left + frameWidth / 2 - box.width / 2, full.width - box.width),
      y: clamp(top + frameHeight / 2 - box.height / 2, full.height - box.height),
    };
    minimapImage.style.transform = `translate(${-minimapOffset.x}px, ${-minimapOffset.y}px)`;
    minimapFrame.style.left = `${left - minimapOffset.x}px`;
    minimapFrame.style.top = `${top - minimapOffset.y}px`;
    minimapFrame.style.width = `${frameWidth}px`;
    minimapFrame.style.height = `${frameHeight}px`;
  }
  const setMinimap = () => {
    if (minimapUrl) URL.revokeObjectURL(minimapUrl);
    minimapUrl = null;
    if (!svgText) return;
    const fit = Math.min(MINIMAP_MAX.width / svgSize.width, MINIMAP_MAX.height / svgSize.height);
    const least = MINIMAP_MIN_SIDE / Math.min(svgSize.width, svgSize.height); // shorter side
    minimapScale = Math.max(fit, Math.min(least, 1));
    const w = svgSize.width * minimapScale;
    const h = svgSize.height * minimapScale;
    minimapImage.style.width = `${w}px`;
    minimapImage.style.height = `${h}px`;
    minimap.style.width = `${Math.min(w, MINIMAP_MAX.width)}px`;
    minimap.style.height = `${Math.min(h, MINIMAP_MAX.height)}px`;
    minimapUrl = URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml" }));
    minimapImage.src = minimapUrl;
  };
  const minimapMove = (event) => {
    const r = minimap.getBoundingClientRect();
    const x = (event.clientX - r.left + minimapOffset.x) / minimapScale;
    const y = (event.clientY - r.top + minimapOffset.y) / minimapScale;
    tx = size().width / 2 - x * scale;
    ty = size().height / 2 - y * scale;
    apply();
  };
  minimap.addEventListener("pointerdown", (event) => {
    event.stopPropagation();
    event.preventDefault();
    minimap.setPointerCapture(event.pointerId);
    minimapMove(event);
    const move = (e) => minimapMove(e);
    const up = () => {
      minimap.removeEventListener("pointermove", move);
      minimap.removeEventListener("pointerup", up);
      minimap.removeEventListener("lostpointercapture", up);
    };
    minimap.addEventListener("pointermove", move);
    minimap.addEventListener("pointerup", up);
    minimap.addEventListener("lostpointercapture", up);
  });

  // -- toolbar -------------------------------------------------------------------------
  const matchInfo = element("span", "oxe-graph-matches");
  const matchButtons = [
    button("◀", "previous search match", () => request({ event: "match", step: -1 })),
    button("▶", "next search match", () => request({ event: "match", step: 1 })),
  ];
  const controlToggle = button("control edges", "", () =>
    request({ event: "control_edges", show: model.get("control_edges") !== "show" }),
  );
  const fileStem = () => model.get("export_name") || "graph";
  const exportSvg = () => {
    if (svgText) download(`${fileStem()}.svg`, new Blob([svgText], { type: "image/svg+xml" }));
  };
  // The PNG is what the pane shows (Shift+click: the whole drawing), at 2× for sharpness:
  // a whole 13k-px-tall drawing made a 7 MB image nobody could read.
  const exportPng = (event) => {
    if (!svgText) return;
    const whole = Boolean(event && event.shiftKey);
    const { width, height } = size();
    const crop = whole
      ? { x: 0, y: 0, width: svgSize.width, height: svgSize.height }
      : {
          x: Math.max(0, -tx / scale),
          y: Math.max(0, -ty / scale),
          width: Math.min(svgSize.width, width / scale),
          height: Math.min(svgSize.height, height / scale),
        };
    crop.width = Math.max(1, Math.min(crop.width, svgSize.width - crop.x));
    crop.height = Math.max(1, Math.min(crop.height, svgSize.height - crop.y));
    const image = new Image();
    const url = URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml" }));
    image.onload = () => {
      const ratio = Math.min(2, 16000 / Math.max(crop.width, crop.height));
      const canvas = document.createElement("canvas");
      canvas.width = Math.round(crop.width * ratio);
      canvas.height = Math.round(crop.height * ratio);
      const context = canvas.getContext("2d");
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, canvas.width, canvas.height);
      const sx = image.naturalWidth / svgSize.width; // the image's own px per stage px
      const sy = image.naturalHeight / svgSize.height;
      context.drawImage(image, crop.x * sx, crop.y * sy, crop.width * sx, crop.height * sy,
        0, 0, canvas.width, canvas.height);
      URL.revokeObjectURL(url);
      const suffix = whole ? "" : "_view";
      canvas.toBlob((blob) => blob && download(`${fileStem()}${suffix}.png`, blob), "image/png");
    };
    image.src = url;
  };
  toolbar.append(
    button("−", "zoom out (-)", () => zoomCentre(0.8)),
    button("+", "zoom in (+)", () => zoomCentre(1.25)),
    button("1:1", "actual size, around the centre of the view (1)", () => zoomCentre(1 / scale)),
    button("fit", "fit the whole drawing in the pane (0)", fit),
    element("span", "oxe-graph-sep"),
    matchInfo,
    ...matchButtons,
    controlToggle,
    element("span", "oxe-graph-spacer"),
    button("SVG", "save this view as an SVG file", exportSvg),
    button("PNG", "save what the pane shows as a PNG image (Shift+click: the whole drawing)", exportPng),
  );

  const showNotes = () => {
    notes.textContent = (model.get("notes") || []).join(" · ");
    const message = model.get("error") || "";
    error.textContent = message;
    error.style.display = message ? "block" : "none";
    if (message) status.textContent = "";
    const shown = model.get("control_edges") === "show";
    controlToggle.style.display = shown || model.get("control_hidden") ? "" : "none";
    controlToggle.textContent = shown ? "hide control edges" : "show control edges";
    controlToggle.title = shown
      ? "hide the ordering-only (control-dependency) edges"
      : `draw the ${model.get("control_hidden")} hidden ordering-only (control-dependency) edges`;
  };

  let busyTimer = null;
  let busyStart = null; // the browser's own clock: a remote kernel's may differ
  const showBusy = () => {
    const what = model.get("busy") || "";
    if (busyTimer) clearInterval(busyTimer);
    busyTimer = null;
    busy.style.display = what ? "flex" : "none";
    if (!what) {
      busyStart = null;
      return;
    }
    if (busyStart === null) busyStart = Date.now();
    const tick = () => {
      const seconds = Math.max(0, (Date.now() - busyStart) / 1000);
      busyText.textContent = `${what}… ${seconds.toFixed(1)} s`;
    };
    tick();
    busyTimer = setInterval(tick, 200);
  };

  // -- the colour bar of a numeric overlay (Python sends only #rrggbb stops and text) --
  const showLegend = () => {
    const scale = model.get("legend") || {};
    const colors = (scale.colors || []).filter((c) => /^#[0-9a-fA-F]{6}$/.test(c));
    legend.replaceChildren();
    legend.style.display = colors.length ? "block" : "none";
    if (!colors.length) return;
    const bar = element("div", "oxe-graph-legend-bar");
    bar.style.background = `linear-gradient(to right, ${colors.join(", ")})`;
    const ends = element("div", "oxe-graph-legend-ends");
    ends.append(element("span", "", String(scale.low || "")), element("span", "", String(scale.high || "")));
    legend.append(element("div", "oxe-graph-legend-title", String(scale.title || "")), bar, ends);
    if (scale.note) legend.append(element("div", "oxe-graph-legend-note", String(scale.note)));
  };

  // -- a new drawing ---------------------------------------------------------------------
  const loadSvg = () => {
    const path = model.get("graph_path");
    if (shownPath !== null && shownPath !== path) savedViews.set(shownPath, { scale, tx, ty });
    const sameGraph = shownPath === path;
    // Where the anchored item is on screen now (before the old drawing goes away).
    stage.replaceChildren();
    svgText = "";
    const text = model.get("svg");
    if (!text) {
      setMinimap();
      apply();
      return;
    }
    const svg = parseSvg(text);
    if (!svg) {
      error.textContent = "the drawing could not be read";
      error.style.display = "block";
      return;
    }
    stage.appendChild(svg);
    svgText = new XMLSerializer().serializeToString(svg);
    const width = parseFloat(svg.getAttribute("width")) || 600;
    const height = parseFloat(svg.getAttribute("height")) || 400;
    svg.setAttribute("width", `${width * PT}px`);
    svg.setAttribute("height", `${height * PT}px`);
    svgSize = { width: width * PT, height: height * PT };
    const ids = model.get("ids") || {};
    for (const g of svg.querySelectorAll("g.node, g.cluster")) {
      const entry = ids[g.id];
      if (entry) g.classList.add(`oxe-kind-${entry.kind}`);
    }
    picked = null;
    status.textContent = "";
    const target = anchor && sameGraph ? findByKey(anchor.key) : null;
    if (target) {
      // Expand/collapse keeps your place: the clicked item's top centre stays put.
      const box = boxOf(target);
      tx = anchor.x - (box.x + box.width / 2) * scale;
      ty = anchor.y - box.y * scale;
    } else if (!sameGraph && savedViews.has(path)) {
      ({ scale, tx, ty } = savedViews.get(path));
    } else if (!sameGraph) {
      firstView();
    }
    const placed = Boolean(target) || sameGraph;
    anchor = null;
    shownPath = path;
    setMinimap();
    apply();
    highlight(placed);
    showMatches();
  };

  const itemAt = (target) => {
    if (!target || !target.closest) return null;
    const ids = model.get("ids") || {};
    // A body cell inside an If/Loop node ("▸ else_branch"): Graphviz ids it "a_<cell id>".
    const cell = target.closest('g[id^="a_"]');
    if (cell && stage.contains(cell) && ids[cell.id.slice(2)]) {
      return { id: cell.id.slice(2), entry: ids[cell.id.slice(2)], node: cell };
    }
    const g = target.closest("g.node, g.cluster");
    if (!g || !stage.contains(g)) return null;
    const entry = ids[g.id];
    return entry ? { id: g.id, entry, node: g } : null;
  };

  const remember = (hit) => {
    const key = keyOf(hit.entry);
    if (!key) return;
    const r = hit.node.getBoundingClientRect();
    const v = viewport.getBoundingClientRect();
    anchor = { key, x: r.left - v.left + r.width / 2, y: r.top - v.top };
  };

  // Python decides what a click means (select, expand, collapse, open a body): the
  // browser only says which drawn item was hit, by its synthetic id, and on which
  // drawing — a click that crosses a redraw is dropped rather than misread.
  const send = (hit, double) =>
    request({ event: "click", id: hit.id, double, version: model.get("version") });

  const click = (target, double) => {
    const hit = itemAt(target);
    if (!hit) {
      if (!double && (model.get("highlight_id") || picked)) {
        picked = null;
        request({ event: "deselect" });
        placeRing();
      }
      return;
    }
    if (hit.entry.kind === "scope" || hit.entry.kind === "fold") {
      if (double) {
        remember(hit);
        send(hit, true);
      } else {
        // One click picks a scope box (a browser-side selection); its tooltip tells more.
        picked = hit.id;
        const what = hit.entry.kind === "fold" ? `blocks ${hit.entry.label}` : hit.entry.path;
        status.textContent = `${hit.entry.open ? "open scope" : "scope"} ${what} · ${hit.entry.nodes.toLocaleString()} nodes — double-click to ${hit.entry.open ? "close" : "open"}`;
        placeRing();
      }
      return;
    }
    if (!double) lastClicked = hit.entry.kind === "body" ? hit.entry.node : hit.id;
    send(hit, double);
  };

  const openSelected = () => {
    const id = picked || model.get("highlight_id");
    const entry = (model.get("ids") || {})[id];
    if (!entry) return;
    if (entry.kind === "scope" || entry.kind === "fold") remember({ id, entry, node: elementFor(id) });
    request({ event: "click", id, double: true, version: model.get("version") });
  };

  // -- pointer: drag pans; a press that barely moves is a click -----------------------
  let drag = null;
  viewport.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    if (event.target.closest && event.target.closest(".oxe-graph-busy, .oxe-graph-minimap")) return;
    viewport.focus({ preventScroll: true });
    // Otherwise the browser starts selecting text or dragging the SVG, and cancels the pan.
    event.preventDefault();
    drag = { x: event.clientX, y: event.clientY, tx, ty, moved: false, target: event.target };
    viewport.setPointerCapture(event.pointerId);
  });
  viewport.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    if (drag.moved) {
      tx = drag.tx + dx;
      ty = drag.ty + dy;
      apply();
    }
  });
  viewport.addEventListener("pointerup", (event) => {
    if (drag && !drag.moved) click(drag.target, false);
    drag = null;
    try {
      viewport.releasePointerCapture(event.pointerId);
    } catch (_) {
      /* already released */
    }
  });
  viewport.addEventListener("pointercancel", () => {
    drag = null;
  });
  viewport.addEventListener("dragstart", (event) => event.preventDefault());
  // Pointer capture makes the viewport the target of the dblclick that follows a press:
  // find what is under the pointer instead.
  viewport.addEventListener("dblclick", (event) => {
    const target = document.elementFromPoint(event.clientX, event.clientY) || event.target;
    click(target, true);
  });
  // The wheel scrolls the notebook, as on a map embedded in a page; Ctrl/⌘+wheel (and a
  // trackpad pinch, which browsers report as Ctrl+wheel) zooms.
  viewport.addEventListener(
    "wheel",
    (event) => {
      if (!event.ctrlKey && !event.metaKey) return;
      event.preventDefault();
      const box = viewport.getBoundingClientRect();
      zoomAt(Math.exp(-event.deltaY * 0.002), event.clientX - box.left, event.clientY - box.top);
    },
    { passive: false },
  );

  // -- keyboard: every key pressed in the graph stops here ----------------------------
  const focusSearch = () => {
    const root = el.closest(".oxe-explorer");
    const input = root && root.querySelector(".oxe-node-search input");
    if (input) {
      input.focus();
      input.select();
    }
  };
  el.addEventListener("keydown", (event) => {
    event.stopPropagation(); // never reaches notebook command mode (dd, arrows, Ctrl+F…)
    // Keys typed into a field or on a button keep their own meaning (Enter presses it).
    if (event.target.closest && event.target.closest("input, textarea, select, button")) return;
    const key = event.key;
    const step = 60;
    const handled = {
      "/": focusSearch,
      Escape: () => {
        picked = null;
        placeRing();
        request({ event: "deselect" });
      },
      Enter: openSelected,
      "+": () => zoomCentre(1.25),
      "=": () => zoomCentre(1.25),
      "-": () => zoomCentre(0.8),
      0: fit,
      1: () => zoomCentre(1 / scale),
      ArrowLeft: () => { tx += step; apply(); },
      ArrowRight: () => { tx -= step; apply(); },
      ArrowUp: () => { ty += step; apply(); },
      ArrowDown: () => { ty -= step; apply(); },
    }[key];
    if ((event.ctrlKey || event.metaKey) && key.toLowerCase() === "f") {
      event.preventDefault();
      focusSearch();
      return;
    }
    if (handled && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      handled();
    }
  });
  el.addEventListener("keyup", (event) => event.stopPropagation());
  el.addEventListener("keypress", (event) => event.stopPropagation());

  // The pane keeps its size when the user resizes it; the ring and minimap follow.
  const resize = new ResizeObserver(() => {
    placeRing();
    placeMinimap();
  });
  resize.observe(viewport);

  const listeners = [
    ["change:svg", loadSvg],
    ["change:highlight_id", highlight],
    ["change:matches", showMatches],
    ["change:match_total", showMatches],
    ["change:notes", showNotes],
    ["change:legend", showLegend],
    ["change:error", showNotes],
    ["change:control_hidden", showNotes],
    ["change:control_edges", showNotes],
    ["change:busy", showBusy],
    ["change:folds", () => folds.update()],
    ["change:fold_report", () => folds.showReport()],
    ["change:busy_since", () => { busyStart = null; showBusy(); }],
    ["change:height", () => { viewport.style.height = model.get("height") || ""; }],
  ];
  for (const [name, callback] of listeners) model.on(name, callback);
  // Marks and the linked view of a compare view (after loadSvg: registered after it).
  const marks = () => showMarks(model, stage);
  model.on("change:svg", marks);
  model.on("change:marks", marks);
  // A compare view asks this pane to centre a node at a readable zoom (the partner of the
  // other side's selection, sent as {centre: node index, path: graph path}): now when it
  // is drawn, else when a drawing of that graph has it (within CENTRE_WAIT ms).
  let centreWanted = null;
  const centreWantedNode = () => {
    if (!centreWanted || model.get("graph_path") !== centreWanted.path) return;
    if (Date.now() - centreWanted.since > CENTRE_WAIT) {
      centreWanted = null;
      return;
    }
    const ids = model.get("ids") || {};
    const id = Object.keys(ids).find((k) => ids[k].kind === "node" && ids[k].index === centreWanted.index);
    const node = id ? elementFor(id) : null;
    if (!node) return;
    centreWanted = null;
    centreOn(node);
  };
  const onCentre = (message) => {
    if (!message || !Number.isInteger(message.centre)) return;
    centreWanted = { index: message.centre, path: String(message.path ?? ""), since: Date.now() };
    centreWantedNode();
  };
  model.on("msg:custom", onCentre);
  model.on("change:svg", centreWantedNode);
  // A compare view's panes change width when its columns stack or unstack (a sidebar
  // opened, the window resized): the middle of the view stays where it was.
  let paneSize = null;
  const keepCentre = new ResizeObserver(() => {
    const width = viewport.clientWidth;
    const height = viewport.clientHeight;
    if (!width || !height) return; // hidden: nothing to keep
    if (paneSize && svgText && el.closest(".oxe-compare-column")) {
      tx += (width - paneSize.width) / 2;
      ty += (height - paneSize.height) / 2;
      apply();
    }
    paneSize = { width, height };
  });
  keepCentre.observe(viewport);
  const unlinkView = linkView(model, el, {
    get: () => ({ scale, tx, ty }),
    set: (t) => {
      scale = Math.min(8, Math.max(0.02, t.scale));
      tx = t.tx;
      ty = t.ty;
      apply();
    },
  });
  showNotes();
  showLegend();
  showBusy();
  showMatches();
  // Any element of the whole explorer that takes focus (node list, search box, buttons)
  // gets the same mark, so no key typed in the explorer runs a notebook shortcut.
  const suppress = (event) => {
    if (event.target && event.target.setAttribute) {
      event.target.setAttribute("data-lm-suppress-shortcuts", "true");
    }
  };
  let explorerRoot = null;
  let disposed = false;
  // Sizes are known once the element is in the page.
  const frame = requestAnimationFrame(() => {
    if (disposed) return;
    explorerRoot = el.closest(".oxe-explorer") || el;
    explorerRoot.addEventListener("focusin", suppress);
    loadSvg();
    marks();
    centreWantedNode();
  });
  return () => {
    disposed = true;
    cancelAnimationFrame(frame);
    if (explorerRoot) explorerRoot.removeEventListener("focusin", suppress);
    for (const [name, callback] of listeners) model.off(name, callback);
    model.off("change:svg", marks);
    model.off("change:marks", marks);
    model.off("msg:custom", onCentre);
    model.off("change:svg", centreWantedNode);
    keepCentre.disconnect();
    unlinkView();
    if (busyTimer) clearInterval(busyTimer);
    if (minimapUrl) URL.revokeObjectURL(minimapUrl);
    resize.disconnect();
  };
}

export default { render };
