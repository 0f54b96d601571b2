# hunyuan vision tests: config/weights/preprocessing, the vision tower against the fixtures, Pillow resize.
lector_add_test(NAME tst_hunyuan_vision_config SOURCES tst_hunyuan_vision_config.cpp LABELS model)
lector_add_test(NAME tst_hunyuan_vision SOURCES tst_hunyuan_vision.cpp LABELS model)
lector_add_test(NAME tst_pillow_resize SOURCES ${CMAKE_CURRENT_LIST_DIR}/../unit/tst_pillow_resize.cpp LABELS unit)

# Vision benchmark (not a test): prints preprocessing and vision-encoder milliseconds per fixture image.
add_executable(bench_hunyuan_vision bench_hunyuan_vision.cpp)
target_link_libraries(bench_hunyuan_vision PRIVATE lector_core)
lector_target_warnings(bench_hunyuan_vision)
target_compile_definitions(bench_hunyuan_vision PRIVATE LECTOR_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
