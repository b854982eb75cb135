# The CUDA backend's device layer (src/backend/cuda), included from the top-level CMakeLists.txt right
# after kiln_backend is defined. Only the toolkit's headers are needed to build it: the driver
# (libcuda.so.1) and NVRTC are opened with dlopen at run time, so the same build runs on machines with
# and without a GPU. Sets KILN_HAVE_CUDA (ON/OFF) in the including scope.
set(KILN_CUDA_ROOT /usr/local/cuda CACHE PATH
    "CUDA toolkit root: its headers at build time, its NVRTC as a fallback at run time")

if(EXISTS ${KILN_CUDA_ROOT}/include/cuda.h AND EXISTS ${KILN_CUDA_ROOT}/include/nvrtc.h)
  # The device layer needs only kiln_support; the backend on top of it (cuda_backend.cpp and its kernels)
  # uses the emitters, the schedule and the host shape code of the views.
  kiln_module(kiln_cuda src/backend/cuda kiln_codegen kiln_schedule kiln_ops kiln_autotune ${CMAKE_DL_LIBS})
  # Measured choices in the tuning store are filed under the build's commit (cuda_choice_store.cpp).
  target_include_directories(kiln_cuda PRIVATE ${PROJECT_BINARY_DIR}/gen)
  add_dependencies(kiln_cuda kiln_git_commit)
  # PUBLIC: cuda_driver.h and cuda_objects.h use cuda.h's types, so whoever includes them (tests/cuda) needs it.
  target_include_directories(kiln_cuda SYSTEM PUBLIC ${KILN_CUDA_ROOT}/include)
  target_compile_definitions(kiln_cuda PUBLIC KILN_HAVE_CUDA=1 PRIVATE KILN_CUDA_ROOT="${KILN_CUDA_ROOT}")
  set(KILN_HAVE_CUDA ON)
else()
  message(STATUS "CUDA toolkit not found at ${KILN_CUDA_ROOT} (no include/cuda.h and include/nvrtc.h): "
                 "building without the CUDA backend")
  set(KILN_HAVE_CUDA OFF)
endif()
