# The include rules of the layers that the include trees (cmake/ExmyLayers.cmake) cannot express
# by themselves, checked on the #include lines of the sources:
#   sim/oracle  may include system headers, sim/oracle/*, sim/common/* and, of the native engine,
#               only the format descriptors (float_format.hpp, rounding.hpp and hd.hpp); no native
#               arithmetic (convert, fp32_ops, round_step, fast_cast, quant_*, optim_*, ...), so
#               that the oracle stays independent of the engine it checks.
#   sim/native  may include system headers and sim/native/* only (header-only, host and device).
# Used twice: included by the top CMakeLists.txt (configure fails, naming the file and the
# header), and run as `cmake -DEXMY_SOURCE_DIR=... -P cmake/ExmyLayerCheck.cmake` by the ctest
# test layers_oracle_has_no_native_arithmetic, so that CI shows a broken layer as a failed test.

set(EXMY_LAYER_RULES
    "sim/oracle|^sim/oracle/|^sim/common/|^sim/native/float_format\\.hpp$|^sim/native/rounding\\.hpp$|^sim/native/hd\\.hpp$"
    "sim/native|^sim/native/")

# exmy_check_layers(SOURCE_DIR OUT_VAR): OUT_VAR gets one line per violation ("" when none).
function(exmy_check_layers source_dir out_var)
  set(violations "")
  foreach(rule IN LISTS EXMY_LAYER_RULES)
    string(REPLACE "|" ";" parts "${rule}")
    list(POP_FRONT parts dir)
    file(GLOB_RECURSE files RELATIVE ${source_dir} ${source_dir}/${dir}/*.hpp
         ${source_dir}/${dir}/*.cpp ${source_dir}/${dir}/*.cu ${source_dir}/${dir}/*.h)
    list(SORT files)
    foreach(f IN LISTS files)
      file(STRINGS ${source_dir}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
      foreach(line IN LISTS lines)
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
        set(ok FALSE)
        foreach(allowed IN LISTS parts)
          if(header MATCHES "${allowed}")
            set(ok TRUE)
          endif()
        endforeach()
        if(NOT ok)
          string(APPEND violations "${f}: #include \"${header}\" is outside the ${dir} layer's allow-list\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
  set(${out_var} "${violations}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT EXMY_SOURCE_DIR)
    message(FATAL_ERROR "usage: cmake -DEXMY_SOURCE_DIR=<exmy source> -P ExmyLayerCheck.cmake")
  endif()
  exmy_check_layers(${EXMY_SOURCE_DIR} violations)
  if(violations)
    message(FATAL_ERROR "layer check failed (cmake/ExmyLayerCheck.cmake):\n${violations}")
  endif()
  message(STATUS "layer check: sim/oracle and sim/native include only what their layers allow")
endif()
