# The Python module `kiln` (src/python, pybind11) over libkiln.so, where Debian's python3-dev and
# pybind11-dev are; without them the build says so and leaves it out. Built into build/python (so that
# PYTHONPATH=build/python imports it), installed into lib/python3/dist-packages beside libkiln.so's
# folder. Sets KILN_HAVE_PYTHON.
if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python_EXECUTABLE /usr/bin/python3)  # Debian's: the one with numpy and pybind11, whatever is first on PATH
endif()
set(PYBIND11_FINDPYTHON ON)
find_package(Python COMPONENTS Interpreter Development.Module QUIET)
find_package(pybind11 CONFIG QUIET)
if(Python_FOUND AND pybind11_FOUND)
  pybind11_add_module(kiln_python MODULE ${PROJECT_SOURCE_DIR}/src/python/kiln_module.cpp)
  set_target_properties(kiln_python PROPERTIES OUTPUT_NAME kiln LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/python
                        INSTALL_RPATH "$ORIGIN/../..;${kiln_openblas_dir}")
  target_link_libraries(kiln_python PRIVATE kiln_shared)
  target_compile_definitions(kiln_python PRIVATE KILN_VERSION="${PROJECT_VERSION}")
  install(TARGETS kiln_python LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/python3/dist-packages)
  set(KILN_HAVE_PYTHON ON)
else()
  message(STATUS "python3-dev or pybind11-dev not found: building without the Python module")
  set(KILN_HAVE_PYTHON OFF)
endif()
