# Vision side sources: config, weights, preprocessing, vision tower, merger.
target_sources(lector_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/weights.cpp
  ${CMAKE_CURRENT_LIST_DIR}/preprocess.cpp
  ${CMAKE_CURRENT_LIST_DIR}/perceive.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vision_tower.cpp
)
lector_openmp_sources(${CMAKE_CURRENT_LIST_DIR}/preprocess.cpp)  # at::parallel_for
