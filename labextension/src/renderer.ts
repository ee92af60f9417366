/**
 * The renderer of an explorer output: the live widget while its model exists, else the
 * static copy saved next to it.
 *
 * An explorer's output carries three representations:
 *   application/vnd.onnx-explorer.view+json   this renderer's own type (ranked first)
 *   application/vnd.jupyter.widget-view+json  the ipywidgets view (model id)
 *   text/html                                 the static copy (summary + drawing)
 *
 * The live view is drawn by @jupyter-widgets/jupyterlab-manager's own renderer, made
 * from the panel's render-mime registry and nested here; it is shown as soon as it holds
 * a view. Until then, and for good when the widget manager has no such model (a saved
 * notebook reopened: "model not found") or the panel has no kernel, the static copy is
 * shown instead of the manager's error text. Untrusted outputs only ever get the static
 * copy, rebuilt from an allow-list (./sanitize.ts), so this renderer is "safe".
 */

import { ISessionContext } from '@jupyterlab/apputils';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import { sanitizedFragment } from './sanitize';

export const VIEW_MIMETYPE = 'application/vnd.onnx-explorer.view+json';
export const WIDGET_VIEW_MIMETYPE = 'application/vnd.jupyter.widget-view+json';
export const STATIC_MIMETYPE = 'text/html';

/** What the renderer shows; also written to the node as `data-oxe-state` (tests read it). */
/**
 * A drawing wider or taller than its scroll box opens on the model's beginning, not on
 * its empty top-left corner: the topmost graph input (an ellipse), else the topmost node,
 * is scrolled to the box's horizontal centre and near its top.
 */
export function scrollToStart(root: HTMLElement): void {
  for (const box of Array.from(root.querySelectorAll<HTMLElement>('div'))) {
    const svg = box.querySelector(':scope > svg');
    if (!svg || (box.scrollWidth <= box.clientWidth && box.scrollHeight <= box.clientHeight)) {
      continue;
    }
    const nodes = Array.from(svg.querySelectorAll('g.node'));
    const inputs = nodes.filter(g => g.querySelector('ellipse'));
    const candidates = inputs.length ? inputs : nodes;
    if (!candidates.length) {
      continue;
    }
    const boxRect = box.getBoundingClientRect();
    const rects = candidates.map(g => g.getBoundingClientRect());
    const start = rects.reduce((best, r) => (r.top < best.top - 1 || (Math.abs(r.top - best.top) <= 1 && r.left < best.left) ? r : best));
    const x = start.left - boxRect.left + box.scrollLeft + start.width / 2;
    const y = start.top - boxRect.top + box.scrollTop;
    box.scrollLeft = Math.max(0, x - box.clientWidth / 2);
    box.scrollTop = Math.max(0, y - 24);
  }
}

export type State = 'waiting' | 'live' | 'static' | 'closed';

const sleep = (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms));

/**
 * One notebook's (or console's) render-mime registry and session, as seen by its
 * explorer outputs.
 *
 * jupyterlab-manager adds an unbound placeholder widget renderer to the application's
 * registry; once a panel's kernel is ready it replaces the factory in that panel's own
 * registry (a clone) by one bound to the panel's widget manager. "Bound" is therefore
 * "the panel's factory differs from the application's".
 */
export class WidgetHost {
  constructor(
    readonly rendermime: IRenderMimeRegistry,
    private readonly _appRendermime: IRenderMimeRegistry,
    private readonly _session: ISessionContext | null
  ) {}

  get bound(): boolean {
    const factory = this.rendermime.getFactory(WIDGET_VIEW_MIMETYPE);
    return factory !== undefined && factory !== this._appRendermime.getFactory(WIDGET_VIEW_MIMETYPE);
  }

  /** Resolves true once the panel has a widget manager, false if it will not get one. */
  async whenBound(): Promise<boolean> {
    if (this.bound) {
      return true;
    }
    if (!this._session) {
      return false;
    }
    try {
      await this._session.ready;
    } catch {
      return false;
    }
    // The manager binds a few promise turns after `ready`; allow for a slower start.
    for (const delay of [0, 50, 250, 1000, 2000]) {
      await sleep(delay);
      if (this.bound) {
        return true;
      }
      if (this._session.isDisposed) {
        return false;
      }
    }
    return false; // no kernel, or no jupyterlab-manager: the static copy stays
  }
}

export class ExplorerOutput extends Panel implements IRenderMime.IRenderer {
  constructor(private readonly _host: WidgetHost) {
    super();
    this.addClass('oxe-output');
    this._setState('waiting');
  }

  get state(): State {
    return this._state;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const generation = ++this._generation;
    this._clear();
    const view = model.data[WIDGET_VIEW_MIMETYPE] as { model_id?: string } | undefined;
    if (view && view.model_id === '') {
      // The widget was closed (jupyterlab-manager empties the id): show nothing, as it does.
      this._setState('closed');
      this.hide();
      return;
    }
    this.show();
    if (!view || !model.trusted) {
      // Nothing to bring to life, or an untrusted saved output: the widget renderer does
      // not take those (it is not "safe"), so neither does this one.
      this._showStatic(model, 'static');
      return;
    }
    if (this._host.bound) {
      // A kernel with a widget manager: the usual case right after running the cell.
      await this._renderLive(model, generation, true);
      return;
    }
    // Not (yet) bound, e.g. a saved notebook just opened: the static copy meanwhile.
    this._showStatic(model, 'waiting');
    const bound = await this._host.whenBound();
    if (generation !== this._generation || this.isDisposed) {
      return;
    }
    if (!bound) {
      this._setState('static');
      return;
    }
    await this._renderLive(model, generation, false);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._generation++;
    this._observer?.disconnect();
    this._observer = null;
    super.dispose();
  }

  private async _renderLive(
    model: IRenderMime.IMimeModel,
    generation: number,
    visible: boolean
  ): Promise<void> {
    const inner = this._host.rendermime.createRenderer(WIDGET_VIEW_MIMETYPE);
    this._inner = inner;
    if (!visible) {
      inner.hide();
    }
    this.addWidget(inner);
    // The manager may find the model later (a kernel's widgets restored after a reload).
    this._observer = new MutationObserver(() => this._goLiveIfViewShown());
    this._observer.observe(inner.node, { childList: true });
    try {
      await inner.renderModel(model);
    } catch (error) {
      console.error('onnx_explorer: the widget renderer failed', error);
    }
    if (generation !== this._generation || this.isDisposed || this._goLiveIfViewShown()) {
      return;
    }
    // No view: "model not found", or the manager is still restoring (then the observer
    // switches to the live view when it comes). Never show the manager's error text.
    inner.hide();
    if (this._static) {
      this._setState('static');
    } else {
      this._showStatic(model, 'static');
    }
  }

  /** Shows the nested widget renderer if it holds a view; true when it does. */
  private _goLiveIfViewShown(): boolean {
    const inner = this._inner;
    if (!inner || inner.isDisposed) {
      return false;
    }
    const hasView = inner instanceof Panel ? inner.widgets.length > 0 : inner.node.childElementCount > 0;
    if (!hasView) {
      return false;
    }
    this._observer?.disconnect();
    this._observer = null;
    this._static?.dispose();
    this._static = null;
    inner.show();
    this._setState('live');
    return true;
  }

  private _showStatic(model: IRenderMime.IMimeModel, state: State): void {
    const html = model.data[STATIC_MIMETYPE];
    const node = document.createElement('div');
    node.className = 'oxe-output-static';
    if (typeof html === 'string') {
      node.appendChild(sanitizedFragment(html));
    } else {
      node.textContent = String(model.data['text/plain'] ?? 'onnx_explorer: run the cell to explore');
    }
    this._static?.dispose();
    this._static = new Widget({ node });
    this.insertWidget(0, this._static);
    this._setState(state);
    requestAnimationFrame(() => scrollToStart(node));
  }

  private _clear(): void {
    this._observer?.disconnect();
    this._observer = null;
    this._static?.dispose();
    this._static = null;
    this._inner?.dispose();
    this._inner = null;
  }

  private _setState(state: State): void {
    this._state = state;
    this.node.dataset.oxeState = state;
  }

  private _generation = 0;
  private _state: State = 'waiting';
  private _static: Widget | null = null;
  private _inner: IRenderMime.IRenderer | null = null;
  private _observer: MutationObserver | null = null;
}
