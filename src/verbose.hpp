// SELGRAPH_VERBOSE (1: a line per execute, 2: also a line per compile) and
// SELGRAPH_JIT_DUMP (1: write each generated kernel's bytes to a file), read
// once, as oneDNN's ONEDNN_VERBOSE and ONEDNN_JIT_DUMP.
#ifndef SELGRAPH_SRC_VERBOSE_HPP
#define SELGRAPH_SRC_VERBOSE_HPP

#include <cstddef>
#include <string>

namespace selgraph {
namespace impl {

int verbose_level();
bool jit_dump_enabled();
/// Writes `size` bytes of generated code to selgraph_jit_<name>.bin in the
/// working directory (for SELGRAPH_JIT_DUMP).
void jit_dump(const std::string &name, const void *code, size_t size);
double now_ms();
/// Prints one line to stdout, whole, under a lock.
void verbose_print(const std::string &line);

} // namespace impl
} // namespace selgraph

#endif
