# image tests
# The decoding test encodes its inputs with OpenCV imgcodecs, absent on the GPU machine.
if(LECTOR_HAVE_IMGCODECS)
  lector_add_test(NAME tst_image_decode SOURCES tst_image_decode.cpp LIBS lector_opencv LABELS unit NO_TORCH_PCH)
endif()
