"""readers.onnx"""
