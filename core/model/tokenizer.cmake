# Tokenizer sources (owner: tokenizer work). utf8proc provides the NFC/NFKC normalizers.
if(LECTOR_DEPS_PREFIX)
  # GPU machine: headers and library unpacked from the Debian package, no pkg-config file there.
  add_library(lector_utf8proc INTERFACE)
  target_include_directories(lector_utf8proc SYSTEM INTERFACE ${LECTOR_DEPS_PREFIX}/usr/include)
  target_link_libraries(lector_utf8proc INTERFACE ${LECTOR_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu/libutf8proc.so)
  target_link_libraries(lector_core PRIVATE lector_utf8proc)
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET GLOBAL libutf8proc)
  target_link_libraries(lector_core PRIVATE PkgConfig::UTF8PROC)
endif()
target_sources(lector_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_added.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_bpe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_bytelevel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_normalizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_pretokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_chars.cpp
)
