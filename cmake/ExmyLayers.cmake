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
#   exmy::io, exmy::fast, exmy::sfu, exmy::format, exmy::gemm, exmy::quant, exmy::optim,
#   exmy::layer, exmy::verify, exmy::golden
#                             one target per folder sim/<folder> (sim/CMakeLists.txt has the
#                             graph); each links only the folders its sources include
#   exmy::sim                 INTERFACE aggregate of the sim/ folder targets, for consumers
#   exmy::gpu                 gpu/                  CUDA kernels
#
# exmy_include_tree(NAME PATH...): makes build/include/NAME/PATH -> source PATH for each PATH
# (a file or a folder) and sets EXMY_TREE_<NAME> to build/include/NAME in the build tree and to
# the one include folder of the installed package, <prefix>/include/exmy, where every tree's
# headers are installed under their source paths (cmake/ExmyInstall.cmake). The paths are recorded
# in the global property EXMY_TREE_PATHS_<NAME>; a target that sets its property
# EXMY_LAYER_TREE to NAME owns the tree, and exmy_check_layer_includes
# (cmake/ExmyLayerCheck.cmake) lets a source include a header only from its own tree or from the
# trees of the targets it links directly.
include(GNUInstallDirs)
set(EXMY_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/exmy)
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
  set_property(GLOBAL PROPERTY EXMY_TREE_PATHS_${name} ${ARGN})
  set(EXMY_TREE_${name} "$<BUILD_INTERFACE:${root}>;$<INSTALL_INTERFACE:${EXMY_INSTALL_INCLUDEDIR}>"
      PARENT_SCOPE)
endfunction()
