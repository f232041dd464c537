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
