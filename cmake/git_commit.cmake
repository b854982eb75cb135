# Run at every build (cmake -P): writes OUT, a header defining KILN_GIT_COMMIT, only when the commit (or
# whether the tree has changes) differs from what it holds, so `kiln --version` names the sources it was
# built from and nothing else rebuilds. SOURCE_DIR: the checkout. Outside a git checkout: "unknown".
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#define KILN_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
