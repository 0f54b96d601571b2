# Compiler launcher and warning flags shared by every target of ours.
find_program(LECTOR_CCACHE ccache)
if(LECTOR_CCACHE)
  # PCH + ccache need these sloppiness settings or every PCH user misses the cache.
  set(_ccache ${CMAKE_COMMAND} -E env
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      ${LECTOR_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_ccache})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${_ccache})
endif()

# lector_target_warnings(target): our warning set; third-party headers come in as SYSTEM.
function(lector_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  # GCC 12 at -O3 reports impossible memcpy sizes inside std::string's operator+ (GCC bugs 105329,
  # 105651: false positives in libstdc++ itself, fixed in GCC 13); they would drown real warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict -Wno-stringop-overflow>)
  endif()
  if(LECTOR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
