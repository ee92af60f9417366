"""Pure views of a model: DOT building, rendering, tables, text and figures (no widgets)."""
