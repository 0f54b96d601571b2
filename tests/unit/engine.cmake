# Engine lifecycle with a fake backend; CLI helpers; the runner's tuning kept between starts.
lector_add_test(NAME tst_engine SOURCES tst_engine.cpp LABELS unit NO_TORCH_PCH)
lector_add_test(NAME tst_kv_scheduler SOURCES tst_kv_scheduler.cpp LABELS unit NO_TORCH_PCH)
lector_add_test(NAME tst_tuning_cache SOURCES tst_tuning_cache.cpp LABELS unit NO_TORCH_PCH)
