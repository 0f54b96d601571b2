# onnx tests
# Operator semantics on tiny in-memory graphs (hand-computed values); no fixtures needed.
lector_add_test(NAME tst_onnx_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_onnx_ops.cpp LABELS unit TIMEOUT 120)
# ModelProto reader on hand-written bytes and broken files; needs models/ppocr-v4.
lector_add_test(NAME tst_onnx_load SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_onnx_load.cpp LABELS model TIMEOUT 120)
# PP-OCRv4 det / rec and mobile v2 cls against the onnxruntime fixtures in shared/fixtures/ppocr.
lector_add_test(NAME tst_onnx_ppocr SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_onnx_ppocr.cpp LABELS model TIMEOUT 300)
# Timings of det (960x960) and rec (8 x 48x320) at 2 threads; not in the default run.
lector_add_test(NAME tst_onnx_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_onnx_bench.cpp LABELS bench TIMEOUT 600)
