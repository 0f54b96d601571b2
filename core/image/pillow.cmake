# Pillow-exact resize sources (HunyuanOCR preprocessing, docs/hunyuanocr-spec.md §2.2).
target_sources(lector_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/pillow_resize.cpp
)
