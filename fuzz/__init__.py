"""Coverage-guided fuzzing of onnx_explorer with atheris (see README, "Fuzzing")."""
