# tokenizer tests (owner: tokenizer work). tst_tokenizer needs the Qwen3 tokenizer.json fetched by
# scripts/fetch-test-data.sh into .cache/test-data (override the folder with LECTOR_TEST_DATA_DIR);
# tst_tokenizer_hunyuan runs only when LECTOR_HUNYUAN_TOKENIZER names HunyuanOCR's tokenizer.json.
lector_add_test(NAME tst_tokenizer SOURCES tst_tokenizer.cpp LABELS unit NO_TORCH_PCH)
target_compile_definitions(tst_tokenizer PRIVATE
  LECTOR_TOKENIZER_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/.cache/test-data")
lector_add_test(NAME tst_tokenizer_files SOURCES tst_tokenizer_files.cpp LABELS unit NO_TORCH_PCH)
lector_add_test(NAME tst_tokenizer_hunyuan SOURCES tst_tokenizer_hunyuan.cpp LABELS unit NO_TORCH_PCH)
