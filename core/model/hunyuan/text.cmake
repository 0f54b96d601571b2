# Text side sources: decoder, XD-RoPE, position ids, prompt layout, KV cache, sampler, generation.
target_sources(lector_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/prompt.cpp
  ${CMAKE_CURRENT_LIST_DIR}/xdrope.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sampler.cpp
  ${CMAKE_CURRENT_LIST_DIR}/generation.cpp
)
