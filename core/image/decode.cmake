# Image decoding and EXIF orientation sources.
target_sources(lector_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exif.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pnm.cpp
)
