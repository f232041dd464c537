// selgraph through its public API, one ISA at a time: a graph with one
// Select op, compiled under impl::scoped_isa_cap, executed on given buffers.
#ifndef SELGRAPH_BENCHMARKS_BENCH_SELGRAPH_HPP
#define SELGRAPH_BENCHMARKS_BENCH_SELGRAPH_HPP

#include <memory>
#include <string>
#include <vector>

#include "bench_suite.hpp"
#include "selgraph/selgraph.hpp"

namespace sgbench {

/// "avx512", "avx2", "ref": the short names used in benchmark names.
const char *isa_short_name(selgraph::cpu_isa isa);

/// Does this CPU run selgraph's kernels of `isa`?
bool cpu_runs(selgraph::cpu_isa isa);

class selgraph_select {
public:
    /// dims: cond, src_0, src_1, dst (numpy broadcast); strides in
    /// elements per operand, none (or an empty vector) for row-major.
    selgraph_select(const std::vector<int64_t> (&dims)[4], dtype t,
                    const std::vector<int64_t> (*strides)[4] = nullptr);

    /// partition::compile with the ISA capped at `isa` for this thread.
    selgraph::compiled_partition compile(selgraph::cpu_isa isa) const;

    /// The dispatcher's choice under the cap, e.g.
    /// "jit:avx512_core avx512_core_e4_cv_av_bv_u4|..._nt 4096x4096 ...".
    std::string plan_label(selgraph::cpu_isa isa) const;

    /// Binds the buffers once; execute() then only runs.
    void bind(const operands &o);
    void execute(const selgraph::compiled_partition &cp);

    /// Lets the kernel cache be exercised cold or warm.
    static void set_cache_capacity(int capacity);

private:
    std::vector<int64_t> dims_[4];
    std::vector<int64_t> strides_[4];
    bool has_strides_ = false;
    dtype type_;
    selgraph::engine eng_;
    selgraph::stream strm_;
    std::vector<selgraph::logical_tensor> in_lts_, out_lts_;
    selgraph::partition part_;
    std::vector<selgraph::tensor> in_ts_, out_ts_;
};

/// A Select compiled once per benchmark name and kept for the whole run, as
/// an application keeps its compiled partitions: the store policy's state
/// carries over from one repetition to the next. `fresh` says whether this
/// call compiled it.
struct compiled_select {
    std::unique_ptr<selgraph_select> sg;
    selgraph::compiled_partition cp;
};
compiled_select &compiled_for(const std::string &name,
                              const std::vector<int64_t> (&dims)[4], dtype t,
                              selgraph::cpu_isa isa,
                              const std::vector<int64_t> (*strides)[4],
                              bool &fresh);

/// Executes of a freshly compiled partition before its first timing: the
/// store policy's first trial window and the one that confirms it
/// (store_policy.hpp), so that the timings see its settled choice.
int warmup_executes();

/// Diagnostic, through selgraph's internal dispatch rather than the API:
/// the kernel the dispatcher picks for `isa`, with its stores forced to
/// regular (`nt` false) or non-temporal ones, whatever the working set. Shows
/// what the store choice (store_policy.hpp) costs per case.
class selgraph_forced_stores {
public:
    selgraph_forced_stores(const std::vector<int64_t> (&dims)[4], dtype t,
                           selgraph::cpu_isa isa, bool nt);
    void run(const operands &o) const;
    std::string label() const;

private:
    struct impl;
    std::shared_ptr<const impl> impl_;
};

} // namespace sgbench

#endif
