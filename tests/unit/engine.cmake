# Engine lifecycle with a fake backend; CLI helpers.
lector_add_test(NAME tst_engine SOURCES tst_engine.cpp LABELS unit NO_TORCH_PCH)
lector_add_test(NAME tst_kv_scheduler SOURCES tst_kv_scheduler.cpp LABELS unit NO_TORCH_PCH)
