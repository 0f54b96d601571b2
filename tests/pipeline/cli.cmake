# cli tests: the lector-cli executable end to end (needs models/ppocr-v4 and shared/).
lector_add_test(NAME tst_cli SOURCES tst_cli.cpp LABELS pipeline NO_TORCH_PCH TIMEOUT 900)
target_compile_definitions(tst_cli PRIVATE LECTOR_CLI_PATH="$<TARGET_FILE:lector-cli>")
add_dependencies(tst_cli lector-cli)
