"""The notebook widgets: the explorer, its panels and the graph view (ipywidgets + anywidget)."""
