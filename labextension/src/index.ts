/**
 * onnx-explorer: JupyterLab 4 / Notebook 7 extension.
 *
 * Registers, in every notebook's and console's render-mime registry, a renderer for
 * `application/vnd.onnx-explorer.view+json` ranked ahead of the ipywidgets renderer.
 * It shows the live explorer widget when the kernel has it, and the static copy saved
 * in the same output (summary + drawing) when it does not, instead of
 * "Error displaying widget: model not found". Outputs without this mime type, and
 * front ends without this extension, are not affected.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ISessionContext } from '@jupyterlab/apputils';
import { ConsolePanel, IConsoleTracker } from '@jupyterlab/console';
import {
  INotebookTracker,
  INotebookWidgetFactory,
  NotebookPanel,
  NotebookWidgetFactory
} from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { ExplorerOutput, VIEW_MIMETYPE, WidgetHost } from './renderer';

/** Lower ranks win; the ipywidgets renderer is at -10, text/html at 50. */
const RANK = -20;

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'onnx-explorer:output-renderer',
  description: 'Shows onnx_explorer outputs live with a kernel and as their saved static copy without one.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookWidgetFactory, INotebookTracker, IConsoleTracker],
  activate: (
    app: JupyterFrontEnd,
    appRendermime: IRenderMimeRegistry,
    notebookFactory: NotebookWidgetFactory.IFactory | null,
    notebooks: INotebookTracker | null,
    consoles: IConsoleTracker | null
  ): void => {
    const done = new WeakSet<IRenderMimeRegistry>();
    const register = (rendermime: IRenderMimeRegistry, session: ISessionContext | null) => {
      if (done.has(rendermime)) {
        return;
      }
      done.add(rendermime);
      const host = new WidgetHost(rendermime, appRendermime, session);
      rendermime.addFactory(
        {
          // Untrusted outputs get only the allow-listed static copy (no widget, no script).
          safe: true,
          mimeTypes: [VIEW_MIMETYPE],
          defaultRank: RANK,
          createRenderer: () => new ExplorerOutput(host)
        },
        RANK
      );
    };
    const onNotebook = (panel: NotebookPanel) =>
      register(panel.content.rendermime, panel.sessionContext);
    const onConsole = (panel: ConsolePanel) =>
      register(panel.console.rendermime, panel.console.sessionContext);

    // widgetCreated fires synchronously when a notebook panel is made, before its file
    // is loaded and its outputs rendered; the tracker is the fallback.
    notebookFactory?.widgetCreated.connect((_, panel) => onNotebook(panel as NotebookPanel));
    if (notebooks) {
      notebooks.forEach(onNotebook);
      notebooks.widgetAdded.connect((_, panel) => onNotebook(panel));
    }
    if (consoles) {
      consoles.forEach(onConsole);
      consoles.widgetAdded.connect((_, panel) => onConsole(panel));
    }
  }
};

export default plugin;
