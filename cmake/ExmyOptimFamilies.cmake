# The optimizer families that live in their own files (docs/SEMANTICS.md 9.9): one name per
# family. A family N is four sources besides its element functions in sim/native:
#   sim/optim/family_<N>.cpp         its registry entries, CPU loop, hyperparameters, campaign ops
#   sim/oracle/steps/family_<N>.cpp  its step oracle (the oracle's family table)
#   gpu/optim/family_<N>.cu          its kernels and launcher (gpu/optim's launcher table)
# sim/CMakeLists.txt and gpu/CMakeLists.txt add the sources; exmy_optim_families_inc writes the
# list as EXMY_OPTIM_FAMILY(N) lines, which the three tables expand (no static initialisers:
# the families are found in a static library without whole-archive linking).
set(EXMY_OPTIM_FAMILIES rmsprop adagrad nadam radam torchao adafactor)

# Writes ${dir}/sim/common/optim_families.inc (the path sim/oracle and sim/optim may include).
function(exmy_optim_families_inc dir)
  set(text "// Generated from cmake/ExmyOptimFamilies.cmake: one line per optimizer family.\n")
  foreach(f IN LISTS EXMY_OPTIM_FAMILIES)
    string(APPEND text "EXMY_OPTIM_FAMILY(${f})\n")
  endforeach()
  file(CONFIGURE OUTPUT ${dir}/sim/common/optim_families.inc CONTENT "${text}")
endfunction()
