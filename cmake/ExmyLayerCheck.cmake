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

# The rule for every sim/ folder, from the target graph (sim/CMakeLists.txt): a source or header
# of a layer target's tree may include, as "dir/...", only headers of its own tree and of the
# trees of the targets it links directly (PUBLIC or PRIVATE; an edge through a third target does
# not count). Includes without a directory ("x.inc": same folder or generated) are not checked.
# Subsumes the two rules above for the targets that carry them: exmy::native links nothing,
# exmy::oracle links exmy::common and exmy::native_descriptors (the three descriptor headers).
#
# exmy_check_layer_includes(OUT_VAR TARGET...): OUT_VAR gets one line per violation ("" when
# none), naming the file, the include and the target's rule. Project mode only.
function(exmy_layer_tree_of target out_var)
  set(t ${target})
  get_target_property(aliased ${t} ALIASED_TARGET)
  if(aliased)
    set(t ${aliased})
  endif()
  get_target_property(tree ${t} EXMY_LAYER_TREE)
  if(NOT tree)
    set(tree "")
  endif()
  set(${out_var} "${tree}" PARENT_SCOPE)
endfunction()

function(exmy_check_layer_includes out_var)
  set(violations "")
  foreach(target IN LISTS ARGN)
    exmy_layer_tree_of(${target} tree)
    if(NOT tree)
      message(FATAL_ERROR "exmy_check_layer_includes: ${target} has no EXMY_LAYER_TREE")
    endif()
    get_property(own GLOBAL PROPERTY EXMY_TREE_PATHS_${tree})
    set(allowed ${own})
    set(linked "")
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    else()
      get_target_property(links ${target} LINK_LIBRARIES)
    endif()
    foreach(link IN LISTS links)
      if(TARGET ${link})
        exmy_layer_tree_of(${link} link_tree)
        if(link_tree)
          get_property(paths GLOBAL PROPERTY EXMY_TREE_PATHS_${link_tree})
          list(APPEND allowed ${paths})
          list(APPEND linked ${link})
        endif()
      endif()
    endforeach()
    list(REMOVE_DUPLICATES allowed)
    list(JOIN allowed ", " allowed_text)
    list(JOIN linked ", " linked_text)
    if(NOT linked_text)
      set(linked_text "no layer")
    endif()
    # The files of the target's own tree (folders scanned whole: headers are in no source list).
    set(files "")
    foreach(path IN LISTS own)
      if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${path})
        file(GLOB_RECURSE found RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/${path}/*.hpp
             ${PROJECT_SOURCE_DIR}/${path}/*.h ${PROJECT_SOURCE_DIR}/${path}/*.cpp
             ${PROJECT_SOURCE_DIR}/${path}/*.cu ${PROJECT_SOURCE_DIR}/${path}/*.cuh
             ${PROJECT_SOURCE_DIR}/${path}/*.inc ${PROJECT_SOURCE_DIR}/${path}/*.in)
        list(APPEND files ${found})
      else()
        list(APPEND files ${path})
      endif()
    endforeach()
    list(SORT files)
    foreach(f IN LISTS files)
      file(STRINGS ${PROJECT_SOURCE_DIR}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
      foreach(line IN LISTS lines)
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" header "${line}")
        if(NOT header MATCHES "/")
          continue()
        endif()
        set(ok FALSE)
        foreach(path IN LISTS allowed)
          string(LENGTH "${path}/" n)
          string(SUBSTRING "${header}" 0 ${n} head)
          if(header STREQUAL path OR head STREQUAL "${path}/")
            set(ok TRUE)
            break()
          endif()
        endforeach()
        if(NOT ok)
          string(APPEND violations
                 "${f}: #include \"${header}\" breaks the layer rule of ${target}: its files may "
                 "include only ${allowed_text} (its own tree and those of the targets it links: "
                 "${linked_text}); link the target that owns the header in sim/CMakeLists.txt "
                 "if the edge belongs in the graph, or move the code\n")
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
