# hunyuan text tests
# Fixture checks (tiny model vs the transformers reference) and hand-value checks of the pieces.
lector_add_test(NAME tst_hunyuan_text SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_hunyuan_text.cpp LABELS model)
lector_add_test(NAME tst_hunyuan_text_units SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_hunyuan_text_units.cpp LABELS unit)

# Benchmark (not a test): prefill ms and ms per decode step on the tiny model, or --model DIR.
add_executable(bench_hunyuan_text ${CMAKE_CURRENT_LIST_DIR}/bench_hunyuan_text.cpp)
target_link_libraries(bench_hunyuan_text PRIVATE lector_core)
target_compile_definitions(bench_hunyuan_text PRIVATE LECTOR_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
lector_target_warnings(bench_hunyuan_text)

# Parity + latency driver (not a test): the model path against a golden file of tools/hunyuan_reference.py,
# on any device and dtype (bench/gpu/run_all.sh runs it on the full-size random model).
add_executable(bench_hunyuan ${CMAKE_CURRENT_LIST_DIR}/bench_hunyuan.cpp)
target_link_libraries(bench_hunyuan PRIVATE lector_core)
lector_target_warnings(bench_hunyuan)

# Continuous batching (scheduler + paged KV + batched backend) against the single-sequence reference.
lector_add_test(NAME tst_hunyuan_engine SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_hunyuan_engine.cpp LABELS model)
lector_add_test(NAME tst_model_runner SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_model_runner.cpp LABELS model)
