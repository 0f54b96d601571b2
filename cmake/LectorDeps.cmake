# Third-party packages. On Debian 12 all come from apt (see lector.sh); on the GPU machine OpenCV and
# PCRE2 come unpacked under LECTOR_DEPS_PREFIX (docs/gpu-machine.md), Torch from the installed PyTorch.
find_package(Torch REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)

if(LECTOR_DEPS_PREFIX)
  # No CMake configs there: build imported targets by hand.
  set(_lib ${LECTOR_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu)
  add_library(lector_opencv INTERFACE)
  target_include_directories(lector_opencv SYSTEM INTERFACE ${LECTOR_DEPS_PREFIX}/usr/include/opencv4)
  target_link_libraries(lector_opencv INTERFACE ${_lib}/libopencv_imgproc.so ${_lib}/libopencv_core.so)
  add_library(lector_pcre2 INTERFACE)
  target_include_directories(lector_pcre2 SYSTEM INTERFACE ${LECTOR_DEPS_PREFIX}/usr/include)
  target_link_libraries(lector_pcre2 INTERFACE ${_lib}/libpcre2-8.so)
  set(LECTOR_HAVE_IMGCODECS OFF)
else()
  find_package(OpenCV 4 REQUIRED COMPONENTS core imgproc imgcodecs)
  add_library(lector_opencv INTERFACE)
  target_include_directories(lector_opencv SYSTEM INTERFACE ${OpenCV_INCLUDE_DIRS})
  target_link_libraries(lector_opencv INTERFACE opencv_core opencv_imgproc opencv_imgcodecs)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  add_library(lector_pcre2 INTERFACE)
  target_link_libraries(lector_pcre2 INTERFACE PkgConfig::PCRE2)
  set(LECTOR_HAVE_IMGCODECS ON)
endif()

# Torch's exported flags: keep its include dirs SYSTEM so its warnings are not ours.
add_library(lector_torch INTERFACE)
target_include_directories(lector_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_link_libraries(lector_torch INTERFACE ${TORCH_LIBRARIES})

# Qt only for the GUI and its tests: core/, app/cli and their tests are Qt-free (the GPU machine has no Qt).
if(LECTOR_GUI)
  find_package(Qt6 6.4 REQUIRED COMPONENTS Core Test Concurrent Gui Widgets LinguistTools)
  find_package(QCoro6 0.8 REQUIRED COMPONENTS Core)
  qt_standard_project_setup()
endif()
