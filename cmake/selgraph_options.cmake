# Warnings (errors with SELGRAPH_WERROR) and sanitizers for selgraph targets.
function(selgraph_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor)
  if(SELGRAPH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(SELGRAPH_SANITIZE)
  string(REPLACE ";" "," _sg_san "${SELGRAPH_SANITIZE}")
  add_compile_options(-fsanitize=${_sg_san} -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_sg_san})
endif()

# Registers `target` with ctest once per ISA cap, through the environment
# variable (as ONEDNN_MAX_CPU_ISA would be used): tests <prefix>_isa_all,
# <prefix>_isa_avx2 and <prefix>_isa_none.
function(selgraph_add_test_per_isa prefix target)
  foreach(isa ALL AVX2 NONE)
    string(TOLOWER ${isa} isa_lc)
    add_test(NAME ${prefix}_isa_${isa_lc} COMMAND ${target})
    set_tests_properties(${prefix}_isa_${isa_lc} PROPERTIES
      ENVIRONMENT "SELGRAPH_MAX_CPU_ISA=${isa};OMP_NUM_THREADS=2")
  endforeach()
endfunction()
