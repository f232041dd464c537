// SELGRAPH_VERBOSE (1: a line per execute, 2: also a line per compile),
// SELGRAPH_JIT_DUMP (1: write each generated kernel's bytes to a file) and
// SELGRAPH_JIT_PROFILE (1: name each kernel's code for Linux perf), read
// once, as oneDNN's ONEDNN_VERBOSE, ONEDNN_JIT_DUMP and ONEDNN_JIT_PROFILE
// (whose perf map is its value 2).
#ifndef SELGRAPH_SRC_VERBOSE_HPP
#define SELGRAPH_SRC_VERBOSE_HPP

#include <cstddef>
#include <string>

namespace selgraph {
namespace impl {

int verbose_level();
/// Called by the generators each time they generate a kernel (once per
/// kernel while the cache holds it), its code final: with
/// SELGRAPH_JIT_DUMP, writes its `size` bytes to selgraph_jit_<name>.bin in
/// the working directory; with SELGRAPH_JIT_PROFILE, appends
/// "<start> <size> selgraph_<name>" (hex) to /tmp/perf-<pid>.map, which the
/// process's first kernel creates afresh: the symbol map Linux perf reads
/// for code that no file holds, so that `perf report` names the kernel of
/// each sample. A kernel generated again after an eviction gets a line of
/// its own; code freed and reused keeps its old line too (as in oneDNN).
void jit_generated(const std::string &name, const void *code, size_t size);
double now_ms();
/// Prints one line to stdout, whole, under a lock.
void verbose_print(const std::string &line);

} // namespace impl
} // namespace selgraph

#endif
