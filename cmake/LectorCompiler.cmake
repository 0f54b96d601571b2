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
  if(LECTOR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
