# ocr tests: the PP-OCR pipeline end to end (needs models/ppocr-v4 and shared/fixtures).
lector_add_test(NAME tst_ocr_pipeline SOURCES tst_ocr_pipeline.cpp LABELS pipeline)
# Accuracy / speed driver on shared/eval-dev (not a test, not installed).
add_executable(ppocr_eval ppocr_eval.cpp)
target_link_libraries(ppocr_eval PRIVATE lector_core)
target_precompile_headers(ppocr_eval REUSE_FROM lector_test_pch_anchor)
lector_target_warnings(ppocr_eval)
