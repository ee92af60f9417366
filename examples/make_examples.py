"""Write the example models used by the README's quick start into examples/_generated/."""

from __future__ import annotations

from pathlib import Path

import onnx

from onnx_explorer.samples import save_with_external_data, tiny_cnn, tiny_transformer

OUT = Path(__file__).resolve().parent / "_generated"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    onnx.save(tiny_cnn(), OUT / "tiny_cnn.onnx")
    save_with_external_data(tiny_transformer(), OUT / "tiny_transformer.onnx")
    for path in sorted(OUT.iterdir()):
        print(f"wrote {path.relative_to(OUT.parent.parent)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
