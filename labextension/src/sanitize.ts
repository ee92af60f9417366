/**
 * The static copy of an explorer (summary tables + the Graphviz SVG) rebuilt from an
 * allow-list, so nothing in a saved output can run code, fetch anything or restyle the
 * page around it.
 *
 * The HTML is parsed in an inert document (DOMParser: no scripts, no loads, no event
 * handlers), then copied node by node into fresh elements: only the tags and attributes
 * `onnx_explorer.widgets.static.static_html` writes survive (the lists
 * tests/test_explorer.py holds it to). No `id` (DOM clobbering), no `href`, no `on*`;
 * a disallowed element is dropped with everything inside it. CSS goes through the
 * browser's own parser: a `<style>` keeps only rules whose selectors are all `.oxe-*`
 * classes, a `style` attribute only a few layout properties, and nothing with `url(`.
 * JupyterLab's own sanitizer cannot be used here: it strips every SVG element.
 */

const HTML_NS = 'http://www.w3.org/1999/xhtml';
const SVG_NS = 'http://www.w3.org/2000/svg';

const HTML_TAGS = new Set([
  'b', 'br', 'code', 'details', 'div', 'em', 'h3', 'h4', 'i', 'li', 'ol', 'p', 'pre',
  'small', 'span', 'strong', 'style', 'summary', 'table', 'tbody', 'td', 'th', 'thead',
  'tr', 'ul'
]);

const SVG_TAGS = new Set([
  'a', 'circle', 'defs', 'ellipse', 'g', 'line', 'lineargradient', 'path', 'polygon',
  'polyline', 'radialgradient', 'rect', 'stop', 'svg', 'text', 'title', 'tspan'
]);

const ATTRIBUTES = new Set([
  'class', 'style', 'width', 'height', 'viewbox', 'transform', 'fill', 'stroke', 'points',
  'd', 'x', 'y', 'x1', 'x2', 'y1', 'y2', 'dx', 'dy', 'cx', 'cy', 'r', 'rx', 'ry',
  'text-anchor', 'font-family', 'font-size', 'font-weight', 'font-style', 'stroke-width',
  'stroke-dasharray', 'stroke-linecap', 'stroke-linejoin', 'fill-opacity',
  'stroke-opacity', 'opacity', 'offset', 'stop-color', 'stop-opacity', 'xlink:title',
  'version', 'preserveaspectratio', 'data-kind', 'colspan', 'rowspan'
]);

/** Properties a `style` attribute may set (the static copy only scrolls its drawing). */
const STYLE_PROPERTIES = new Set([
  'max-height', 'max-width', 'height', 'width', 'overflow', 'overflow-x', 'overflow-y',
  'color', 'background-color', 'font-size', 'font-weight', 'font-style', 'font-family',
  'text-align', 'vertical-align', 'white-space', 'fill', 'stroke', 'stroke-width', 'opacity',
  'display', 'padding', 'padding-top', 'padding-right', 'padding-bottom', 'padding-left',
  'margin', 'margin-top', 'margin-right', 'margin-bottom', 'margin-left', 'border',
  'border-top', 'border-right', 'border-bottom', 'border-left', 'border-width',
  'border-style', 'border-color', 'border-radius', 'border-top-width', 'border-right-width',
  'border-bottom-width', 'border-left-width', 'border-top-style', 'border-right-style',
  'border-bottom-style', 'border-left-style', 'border-top-color', 'border-right-color',
  'border-bottom-color', 'border-left-color', 'background', 'background-image',
  'background-position-x', 'background-position-y', 'background-size',
  'background-repeat', 'background-attachment', 'background-origin', 'background-clip',
  'padding-inline', 'margin-inline', 'list-style', 'list-style-type', 'word-break',
  'overflow-wrap'
]);

const UNSAFE_VALUE = /url\s*\(|image-set\s*\(|expression\s*\(|javascript:|@import/i;
const OWN_SELECTOR = /^\.oxe-[\w-]+([\s>+~]*\.oxe-[\w-]+|\s+[a-z]+)*$/;

/** The rules of a `<style>` that only style `.oxe-*` elements, re-serialized by the browser. */
export function safeStylesheet(text: string): string {
  const sheet = new CSSStyleSheet();
  try {
    sheet.replaceSync(text); // drops @import by itself
  } catch {
    return '';
  }
  const kept: string[] = [];
  for (const rule of Array.from(sheet.cssRules)) {
    if (!(rule instanceof CSSStyleRule)) {
      continue; // @media, @font-face, @keyframes, ...
    }
    const selectors = rule.selectorText.split(',').map(s => s.trim());
    if (selectors.every(s => OWN_SELECTOR.test(s)) && !UNSAFE_VALUE.test(rule.style.cssText)) {
      kept.push(rule.cssText);
    }
  }
  return kept.join('\n');
}

/** A `style` attribute reduced to the allowed properties, or '' when none is left. */
export function safeInlineStyle(text: string): string {
  const scratch = document.createElement('div');
  scratch.setAttribute('style', text);
  const kept: string[] = [];
  for (const name of Array.from(scratch.style)) {
    const value = scratch.style.getPropertyValue(name);
    // A negative margin could pull the static copy over the cells around it.
    const outward = name.startsWith('margin') && value.includes('-');
    if (STYLE_PROPERTIES.has(name) && !UNSAFE_VALUE.test(value) && !outward) {
      kept.push(`${name}: ${value}`);
    }
  }
  return kept.join('; ');
}

function copyNode(node: Node, into: Node): void {
  if (node.nodeType === Node.TEXT_NODE) {
    into.appendChild(document.createTextNode((node as Text).data));
    return;
  }
  if (node.nodeType !== Node.ELEMENT_NODE) {
    return; // comments, processing instructions, doctype
  }
  const source = node as Element;
  const name = source.localName.toLowerCase();
  const allowed =
    source.namespaceURI === HTML_NS ? HTML_TAGS.has(name) : source.namespaceURI === SVG_NS && SVG_TAGS.has(name);
  if (!allowed) {
    return;
  }
  const copy = document.createElementNS(source.namespaceURI, source.localName);
  if (source.namespaceURI === HTML_NS && name === 'style') {
    copy.textContent = safeStylesheet(source.textContent ?? '');
    into.appendChild(copy);
    return;
  }
  for (const attribute of Array.from(source.attributes)) {
    const attributeName = attribute.name.toLowerCase();
    let value = attribute.value;
    if (!ATTRIBUTES.has(attributeName)) {
      continue;
    }
    if (attributeName === 'style') {
      value = safeInlineStyle(value);
    }
    if (!value || UNSAFE_VALUE.test(value)) {
      continue;
    }
    if (attribute.namespaceURI) {
      copy.setAttributeNS(attribute.namespaceURI, attribute.name, value);
    } else {
      copy.setAttribute(attribute.name, value);
    }
  }
  for (const child of Array.from(source.childNodes)) {
    copyNode(child, copy);
  }
  into.appendChild(copy);
}

/** A fragment of fresh, allow-listed nodes built from `html`. */
export function sanitizedFragment(html: string): DocumentFragment {
  const parsed = new DOMParser().parseFromString(html, 'text/html');
  const fragment = document.createDocumentFragment();
  // A leading <style> is parsed into <head>; everything else into <body>.
  for (const parent of [parsed.head, parsed.body]) {
    for (const child of Array.from(parent.childNodes)) {
      copyNode(child, fragment);
    }
  }
  return fragment;
}
