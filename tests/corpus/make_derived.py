"""Rebuild the derived (quantized) models of tests/corpus from their published sources.

    python tests/corpus/make_derived.py [--wheels DIR] [--out DIR] [--with-qdq]

Each source model is taken from a PyPI wheel (``pip download --no-deps``; pass
``--wheels DIR`` to use wheels already downloaded there), its sha256 is checked,
and it is quantized with ``onnxruntime.quantization``. The files in the corpus
were made with onnxruntime 1.32.0 and onnx 1.23.2 (see MANIFEST.json); other
versions may give different bytes, with the same op types.

--with-qdq also writes silero_vad_v6_qdq.onnx (static QDQ, 8 seeded random
calibration batches). It is NOT in the corpus: smart_turn_v3_2_cpu.onnx is a
real QDQ model shipped by pipecat-ai, so none had to be derived.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (output file, wheel name, version, path in the wheel, source sha256)
SOURCES = {
    "silero_vad_v6_dynint8.onnx": (
        "faster-whisper",
        "1.2.1",
        "faster_whisper/assets/silero_vad_v6.onnx",
        "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2",
    ),
    "g2p_id_lstm_decoder_dynint8.onnx": (
        "g2p-id-py",
        "0.4.2",
        "g2p_id/models/lstm/decoder_model.onnx",
        "d269795a4b504a46af6bbcbd388142e7e4d8fc3d34f491bd377b1247287766cb",
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel_for(name: str, version: str, wheels: Path) -> Path:
    stem = name.replace("-", "_")
    found = sorted(wheels.glob(f"{stem}-{version}-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-d",
                str(wheels),
                f"{name}=={version}",
            ],
            check=True,
        )
        found = sorted(wheels.glob(f"{stem}-{version}-*.whl"))
    return found[0]


def extract(name: str, version: str, member: str, want: str, wheels: Path, tmp: Path) -> Path:
    with zipfile.ZipFile(wheel_for(name, version, wheels)) as z:
        out = tmp / Path(member).name
        out.write_bytes(z.read(member))
    got = sha256(out)
    if got != want:
        raise SystemExit(f"{name}=={version}:{member} has sha256 {got}, expected {want}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--wheels", type=Path, default=None, help="folder with (or for) the source wheels"
    )
    ap.add_argument("--out", type=Path, default=HERE, help="where to write the derived models")
    ap.add_argument("--with-qdq", action="store_true", help="also write silero_vad_v6_qdq.onnx")
    args = ap.parse_args()

    import numpy as np
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        wheels = args.wheels or tmp
        src = {out: extract(*spec, wheels, tmp) for out, spec in SOURCES.items()}

        # Conv -> ConvInteger (+ DynamicQuantizeLinear), LSTM -> com.microsoft DynamicQuantizeLSTM
        quantize_dynamic(
            src["silero_vad_v6_dynint8.onnx"],
            args.out / "silero_vad_v6_dynint8.onnx",
            weight_type=QuantType.QInt8,
        )
        # MatMul -> MatMulInteger, LSTM -> DynamicQuantizeLSTM (a tf2onnx model)
        quantize_dynamic(
            src["g2p_id_lstm_decoder_dynint8.onnx"],
            args.out / "g2p_id_lstm_decoder_dynint8.onnx",
            weight_type=QuantType.QInt8,
        )

        if args.with_qdq:

            class Batches(CalibrationDataReader):
                def __init__(self) -> None:
                    rng = np.random.default_rng(0)
                    zeros = np.zeros((1, 1, 128), np.float32)
                    self._it = iter(
                        [
                            {
                                "input": (0.1 * rng.standard_normal((4, 576))).astype(np.float32),
                                "h": zeros,
                                "c": zeros,
                            }
                            for _ in range(8)
                        ]
                    )

                def get_next(self):
                    return next(self._it, None)

            quantize_static(
                src["silero_vad_v6_dynint8.onnx"],
                args.out / "silero_vad_v6_qdq.onnx",
                Batches(),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=True,
            )

    for f in sorted(args.out.glob("*_dynint8.onnx")) + sorted(args.out.glob("*_qdq.onnx")):
        print(f.name, f.stat().st_size, sha256(f))


if __name__ == "__main__":
    main()
