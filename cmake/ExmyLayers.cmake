# The layers of exmy as include trees. Every layer's headers are reachable only through a tree of
# symbolic links in the build directory, build/include/<tree>/<path> -> <source>/<path>, that the
# layer's target exports; the project root is nobody's include directory. A target that does not
# link a layer therefore cannot include its headers: the boundary is checked by the compiler, not
# by review. (The links point into the source tree, so edits show without re-configuring.)
#
#   exmy::common              sim/common            errors shared by every host layer
#   exmy::native              sim/native            header-only engine, host and device
#   exmy::native_descriptors  3 headers of sim/native: the format descriptors (float_format.hpp),
#                             the rounding-mode enums (rounding.hpp) and hd.hpp they need; what
#                             the oracle may see of the engine (no native arithmetic)
#   exmy::oracle              sim/oracle            MPFR reference
#   exmy::sim                 sim/{fast,format,io,optim,quant,verify}
#   exmy::gpu                 gpu/                  CUDA kernels
#
# exmy_include_tree(NAME PATH...): makes build/include/NAME/PATH -> source PATH for each PATH
# (a file or a folder) and sets EXMY_TREE_<NAME> to build/include/NAME.
function(exmy_include_tree name)
  set(root ${PROJECT_BINARY_DIR}/include/${name})
  foreach(path IN LISTS ARGN)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${path})
      message(FATAL_ERROR "exmy_include_tree(${name}): ${path} does not exist")
    endif()
    get_filename_component(parent ${root}/${path} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${path} ${root}/${path} SYMBOLIC)
  endforeach()
  set(EXMY_TREE_${name} ${root} PARENT_SCOPE)
endfunction()
