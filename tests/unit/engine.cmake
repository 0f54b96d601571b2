# Engine lifecycle with a fake backend; CLI helpers.
lector_add_test(NAME tst_engine SOURCES tst_engine.cpp LABELS unit)
