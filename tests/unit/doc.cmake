# doc tests: exporters + batch writer, model-output parsing, presets + PP-OCR field extraction.
# Inputs: realistic model outputs in tests/data/doc (README there) and the shipped resources/presets.
lector_add_test(NAME tst_doc_export SOURCES tst_doc_export.cpp tst_doc_writer.cpp LABELS unit NO_TORCH_PCH)
lector_add_test(NAME tst_doc_parser SOURCES tst_doc_parser.cpp LABELS unit NO_TORCH_PCH)
lector_add_test(NAME tst_doc_preset SOURCES tst_doc_preset.cpp tst_doc_fields.cpp LABELS unit NO_TORCH_PCH)
foreach(_t tst_doc_export tst_doc_parser tst_doc_preset)
  target_compile_definitions(${_t} PRIVATE
    LECTOR_DOC_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data/doc"
    LECTOR_PRESETS_DIR="${PROJECT_SOURCE_DIR}/resources/presets")
endforeach()
