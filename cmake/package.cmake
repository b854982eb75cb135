# kiln as a library (included from the top-level CMakeLists.txt once every module exists):
# libkiln.so, the modules' objects in one shared library with an SONAME whose exports are only the public
# API of include/kiln (cmake/libkiln.map); the imported target kiln::kiln for add_subdirectory and for
# find_package(kiln); `cmake --install` puts the kiln command, the library, the headers, kilnConfig.cmake
# (with its version file) and kiln.pc under the prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(kiln_library_modules kiln_support kiln_ir kiln_onnx kiln_onnx_proto kiln_kernels kiln_ops kiln_passes
    kiln_codegen kiln_loops kiln_lower kiln_templates kiln_autotune kiln_schedule kiln_backend kiln_compiler
    kiln_runtime kiln_capi)
if(KILN_HAVE_CUDA)
  list(APPEND kiln_library_modules kiln_cuda)
endif()
set(kiln_library_objects "")
foreach(module ${kiln_library_modules})
  list(APPEND kiln_library_objects $<TARGET_OBJECTS:${module}>)
endforeach()

add_library(kiln_shared SHARED ${kiln_library_objects})
set_target_properties(kiln_shared PROPERTIES OUTPUT_NAME kiln EXPORT_NAME kiln
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
# The objects' own dependencies (the static modules carry them as usage requirements).
target_link_libraries(kiln_shared PRIVATE fmt::fmt protobuf::libprotobuf SQLite::SQLite3 kiln_dnnl kiln_openblas
                      OpenMP::OpenMP_CXX ${CMAKE_DL_LIBS})
target_link_options(kiln_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libkiln.map -Wl,--no-undefined)
set_property(TARGET kiln_shared APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libkiln.map)
target_include_directories(kiln_shared INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(kiln_shared INTERFACE cxx_std_20)
add_library(kiln::kiln ALIAS kiln_shared)
# Installed binaries find OpenBLAS's OpenMP build in its own folder, whichever libopenblas.so.0 the
# system's alternatives point at (a pthreads OpenBLAS would fight kiln's OpenMP threads).
get_filename_component(kiln_openblas_dir ${OPENBLAS_LIBRARY} DIRECTORY)
set_target_properties(kiln kiln_shared PROPERTIES INSTALL_RPATH ${kiln_openblas_dir})

install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln_shared EXPORT kilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# A Debian package: `cpack -G DEB` in the build folder (after ninja) makes kiln_VERSION_ARCH.deb with the
# command, the library, headers, CMake and pkg-config files and the Python module. Its library
# dependencies come from dpkg-shlibdeps; a C++ compiler is a dependency of its own, because kiln compiles
# the kernels it generates with the system's c++ at run time.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "kiln developers <kiln@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "a compiler for machine-learning models (ONNX to fused CPU and CUDA kernels)")
set(CPACK_PACKAGE_INSTALL_DIRECTORY /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "g++ (>= 4:12), libopenblas0-openmp")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-numpy")  # for the Python module
include(CPack)
