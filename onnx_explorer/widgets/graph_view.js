// The clickable graph: Graphviz SVG with pan, zoom and fit; clicks set synced traits.
// Written for onnx_explorer; no network access, no third-party code.

const SVG_NS = "http://www.w3.org/2000/svg";

function button(label, title, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "oxe-graph-button";
  b.textContent = label;
  b.title = title;
  b.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick();
  });
  return b;
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
  for (const element of svg.querySelectorAll("*")) {
    for (const attribute of Array.from(element.attributes)) {
      const name = attribute.name.toLowerCase();
      if (name.startsWith("on") || name === "href" || name === "xlink:href") {
        element.removeAttribute(attribute.name);
      }
    }
  }
  return document.importNode(svg, true);
}

function render({ model, el }) {
  el.classList.add("oxe-graph");
  const toolbar = document.createElement("div");
  toolbar.className = "oxe-graph-toolbar";
  const viewport = document.createElement("div");
  viewport.className = "oxe-graph-viewport";
  viewport.style.height = model.get("height") || "560px";
  const stage = document.createElement("div");
  stage.className = "oxe-graph-stage";
  viewport.appendChild(stage);
  const notes = document.createElement("div");
  notes.className = "oxe-graph-notes";
  const error = document.createElement("div");
  error.className = "oxe-graph-error";
  // Shown over the drawing while dot runs in the kernel's worker thread.
  const busy = document.createElement("div");
  busy.className = "oxe-graph-busy";
  const busyText = document.createElement("span");
  const cancel = button("Cancel", "stop this layout (the dot process is killed)", () => {
    model.send({ event: "cancel" });
  });
  busy.append(busyText, cancel);
  viewport.appendChild(busy);
  el.append(toolbar, error, viewport, notes);

  let scale = 1;
  let tx = 0;
  let ty = 0;
  let svgSize = { width: 1, height: 1 };
  const apply = () => {
    stage.style.transform = `translate(${tx}px, ${ty}px) scale(${scale})`;
  };
  const zoomAt = (factor, cx, cy) => {
    const next = Math.min(8, Math.max(0.02, scale * factor));
    tx = cx - ((cx - tx) * next) / scale;
    ty = cy - ((cy - ty) * next) / scale;
    scale = next;
    apply();
  };
  const fit = () => {
    const width = viewport.clientWidth || 600;
    const height = viewport.clientHeight || 500;
    scale = Math.min(width / svgSize.width, height / svgSize.height, 1.5);
    tx = (width - svgSize.width * scale) / 2;
    ty = Math.max(0, (height - svgSize.height * scale) / 2);
    apply();
  };

  toolbar.append(
    button("+", "zoom in", () => zoomAt(1.25, viewport.clientWidth / 2, viewport.clientHeight / 2)),
    button("−", "zoom out", () => zoomAt(0.8, viewport.clientWidth / 2, viewport.clientHeight / 2)),
    button("fit", "fit the whole graph in view", fit),
    button("1:1", "actual size", () => {
      scale = 1;
      apply();
    }),
  );

  const controlToggle = button("control edges", "", () => {
    model.send({ event: "control_edges", show: model.get("control_edges") !== "show" });
  });
  toolbar.append(controlToggle);

  const showNotes = () => {
    notes.textContent = (model.get("notes") || []).join(" · ");
    const message = model.get("error") || "";
    error.textContent = message;
    error.style.display = message ? "block" : "none";
    const shown = model.get("control_edges") === "show";
    controlToggle.style.display = shown || model.get("control_hidden") ? "" : "none";
    controlToggle.textContent = shown ? "hide control edges" : "show control edges";
    controlToggle.title = shown
      ? "hide the ordering-only (control-dependency) edges"
      : `draw the ${model.get("control_hidden")} hidden ordering-only (control-dependency) edges`;
  };

  let busyTimer = null;
  const showBusy = () => {
    const what = model.get("busy") || "";
    if (busyTimer) clearInterval(busyTimer);
    busyTimer = null;
    busy.style.display = what ? "flex" : "none";
    if (!what) return;
    const tick = () => {
      const seconds = Math.max(0, (Date.now() - (model.get("busy_since") || Date.now())) / 1000);
      busyText.textContent = `${what}… ${seconds.toFixed(1)} s`;
    };
    tick();
    busyTimer = setInterval(tick, 200);
  };

  // Centre an element of the drawing in the viewport if it is not fully visible.
  const reveal = (element) => {
    const box = element.getBoundingClientRect();
    const view = viewport.getBoundingClientRect();
    if (!box.width && !box.height) return;
    const inside =
      box.left >= view.left && box.right <= view.right && box.top >= view.top && box.bottom <= view.bottom;
    if (!inside) {
      tx += view.left + view.width / 2 - (box.left + box.width / 2);
      ty += view.top + view.height / 2 - (box.top + box.height / 2);
      apply();
    }
  };

  const highlight = () => {
    for (const old of stage.querySelectorAll(".oxe-selected")) {
      old.classList.remove("oxe-selected");
    }
    const id = model.get("highlight_id");
    if (!id) return;
    const element = stage.querySelector(`g[id="${CSS.escape(id)}"]`);
    if (element) {
      element.classList.add("oxe-selected");
      reveal(element);
    }
  };

  const loadSvg = () => {
    stage.replaceChildren();
    const text = model.get("svg");
    if (!text) return;
    const svg = parseSvg(text);
    if (!svg) {
      error.textContent = "the drawing could not be read";
      error.style.display = "block";
      return;
    }
    stage.appendChild(svg);
    const width = parseFloat(svg.getAttribute("width")) || 600;
    const height = parseFloat(svg.getAttribute("height")) || 400;
    // Graphviz sizes are in points; the viewBox keeps drawing coordinates.
    svg.setAttribute("width", `${width * 1.333}px`);
    svg.setAttribute("height", `${height * 1.333}px`);
    svgSize = { width: width * 1.333, height: height * 1.333 };
    for (const g of svg.querySelectorAll("g.node, g.cluster")) {
      const entry = (model.get("ids") || {})[g.id];
      if (entry) g.classList.add(`oxe-kind-${entry.kind}`);
    }
    requestAnimationFrame(() => {
      fit();
      highlight();
    });
  };

  const itemAt = (target) => {
    if (!target.closest) return null;
    const ids = model.get("ids") || {};
    // A body cell inside an If/Loop node ("▸ else_branch"): Graphviz ids it "a_<cell id>".
    const cell = target.closest('g[id^="a_"]');
    if (cell && stage.contains(cell) && ids[cell.id.slice(2)]) {
      return { id: cell.id.slice(2), entry: ids[cell.id.slice(2)] };
    }
    const g = target.closest("g.node, g.cluster");
    if (!g || !stage.contains(g)) return null;
    const entry = ids[g.id];
    return entry ? { id: g.id, entry } : null;
  };

  // Python decides what a click means (select, expand, collapse, open a body): the
  // browser only says which drawn item was hit, by its synthetic id, and on which
  // drawing — a click that crosses a redraw is dropped rather than misread.
  const click = (target, double) => {
    const hit = itemAt(target);
    if (!hit) return;
    model.send({ event: "click", id: hit.id, double, version: model.get("version") });
  };

  // Drag pans; a press that barely moves is a click.
  let drag = null;
  viewport.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    if (event.target.closest && event.target.closest(".oxe-graph-busy")) return; // Cancel
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
  // Pointer capture makes the viewport the target of the dblclick that follows a press:
  // find what is under the pointer instead.
  viewport.addEventListener("pointercancel", () => {
    drag = null;
  });
  viewport.addEventListener("dragstart", (event) => event.preventDefault());
  viewport.addEventListener("dblclick", (event) => {
    const target = document.elementFromPoint(event.clientX, event.clientY) || event.target;
    click(target, true);
  });
  viewport.addEventListener(
    "wheel",
    (event) => {
      event.preventDefault();
      const box = viewport.getBoundingClientRect();
      zoomAt(Math.exp(-event.deltaY * 0.0015), event.clientX - box.left, event.clientY - box.top);
    },
    { passive: false },
  );

  const listeners = [
    ["change:svg", loadSvg],
    ["change:highlight_id", highlight],
    ["change:notes", showNotes],
    ["change:error", showNotes],
    ["change:control_hidden", showNotes],
    ["change:control_edges", showNotes],
    ["change:busy", showBusy],
    ["change:busy_since", showBusy],
  ];
  for (const [name, callback] of listeners) model.on(name, callback);
  showNotes();
  showBusy();
  loadSvg();
  return () => {
    for (const [name, callback] of listeners) model.off(name, callback);
    if (busyTimer) clearInterval(busyTimer);
  };
}

export default { render };
