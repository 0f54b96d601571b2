# onnx tests
