"""``python -m onnx_explorer.cli``: the same as the ``onnx-explorer`` command."""

import sys

from . import main

sys.exit(main())
