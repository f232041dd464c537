#include "bench_selgraph.hpp"

#include <omp.h>

#include <map>
#include <stdexcept>

#include "src/broadcast.hpp"
#include "src/cpu_isa.hpp"
#include "src/dispatch.hpp"

namespace sgbench {

using selgraph::cpu_isa;
using selgraph::logical_tensor;
using ldt = logical_tensor::data_type;
using ltype = logical_tensor::layout_type;

const char *isa_short_name(cpu_isa isa) {
    switch (isa) {
        case cpu_isa::avx512_core: return "avx512";
        case cpu_isa::avx2: return "avx2";
        case cpu_isa::none: return "ref";
        default: return "all";
    }
}

bool cpu_runs(cpu_isa isa) {
    const selgraph::impl::scoped_isa_cap cap(isa);
    return selgraph::get_effective_cpu_isa() == isa;
}

selgraph_select::selgraph_select(const std::vector<int64_t> (&dims)[4], dtype t,
                                 const std::vector<int64_t> (*strides)[4])
    : type_(t)
    , eng_(selgraph::engine::kind::cpu, 0)
    , strm_(eng_) {
    for (int i = 0; i < 4; ++i) {
        dims_[i] = dims[i];
        if (strides)
            strides_[i] = (*strides)[i];
    }
    has_strides_ = strides != nullptr;
    const ldt dt = t == dtype::f32    ? ldt::f32
                   : t == dtype::f64  ? ldt::f64
                   : t == dtype::s8   ? ldt::s8
                   : t == dtype::bf16 ? ldt::bf16
                                      : ldt::f16;
    logical_tensor lts[4];
    for (int i = 0; i < 4; ++i) {
        const ldt type = i == op_cond ? ldt::boolean : dt;
        const bool dense = !strides || (*strides)[i].empty();
        lts[i] = dense ? logical_tensor(static_cast<size_t>(i), type, dims_[i],
                                        ltype::strided)
                       : logical_tensor(static_cast<size_t>(i), type, dims_[i],
                                        (*strides)[i]);
    }
    in_lts_ = { lts[op_cond], lts[op_src0], lts[op_src1] };
    out_lts_ = { lts[op_dst] };
    selgraph::graph g(selgraph::engine::kind::cpu);
    g.add_op(selgraph::op(0, selgraph::op::kind::Select, in_lts_, out_lts_,
                          "select"));
    g.finalize();
    const auto parts = g.get_partitions();
    if (parts.size() != 1 || !parts[0].is_supported())
        throw std::runtime_error("selgraph: Select not claimed");
    part_ = parts[0];
}

selgraph::compiled_partition selgraph_select::compile(cpu_isa isa) const {
    const selgraph::impl::scoped_isa_cap cap(isa);
    return part_.compile(in_lts_, out_lts_, eng_);
}

namespace {

namespace si = selgraph::impl;

// The N-d problem as compile builds it for dense tensors: right-aligned to
// dst, stride 0 where an operand's dim is 1 or missing. `working_set`: the
// bytes an execute touches, as compile passes to the dispatcher.
si::select_nd make_nd(const std::vector<int64_t> (&dims)[4], dtype t,
                      size_t &working_set,
                      const std::vector<int64_t> (*strides)[4] = nullptr) {
    si::select_nd nd;
    nd.ndims = static_cast<int>(dims[op_dst].size());
    nd.elem_size = dtype_size(t);
    for (int i = 0; i < nd.ndims; ++i)
        nd.dims[i] = dims[op_dst][static_cast<size_t>(i)];
    for (int op = 0; op < 4; ++op) {
        const std::vector<int64_t> &d = dims[op];
        const int shift = nd.ndims - static_cast<int>(d.size());
        const bool given = strides && !(*strides)[op].empty();
        int64_t acc = 1;
        for (int i = nd.ndims - 1; i >= 0; --i) {
            const int j = i - shift;
            const int64_t n = j < 0 ? 1 : d[static_cast<size_t>(j)];
            const int64_t st = given && j >= 0
                                       ? (*strides)[op][static_cast<size_t>(j)]
                                       : acc;
            nd.strides[op][i] = n == 1 ? 0 : st;
            acc *= n;
        }
    }
    working_set = si::select_touched_bytes(nd);
    return nd;
}

std::string describe(const si::select_plan &plan) {
    return std::string(plan.impl_str()) + " " + plan.kernel_str() + " ["
           + si::folded2str(plan.folded) + "]";
}

} // namespace

std::string selgraph_select::plan_label(cpu_isa isa) const {
    size_t working_set = 0;
    const si::select_nd nd = make_nd(dims_, type_, working_set,
                                     has_strides_ ? &strides_ : nullptr);
    const si::scoped_isa_cap cap(isa);
    const si::select_plan plan = si::plan_select(nd, working_set);
    // "auto": execute measures the plan's store kinds (store_policy.hpp,
    // select_plan::store_kinds).
    return describe(plan) + " stores="
           + (plan.tuner      ? "auto"
              : plan.has_nt() ? "nt"
                              : "regular");
}

struct selgraph_forced_stores::impl {
    si::select_nd nd;
    si::select_plan plan;
    bool nt = false;
};

selgraph_forced_stores::selgraph_forced_stores(
        const std::vector<int64_t> (&dims)[4], dtype t, cpu_isa isa, bool nt) {
    auto p = std::make_shared<impl>();
    size_t working_set = 0;
    p->nd = make_nd(dims, t, working_set);
    const si::scoped_isa_cap cap(isa);
    // A working set of 0 never asks for non-temporal stores; one above any
    // cache always does (execute then uses them for a w-aligned dst).
    p->plan = si::plan_select(p->nd, nt ? size_t(1) << 50 : 0);
    p->nt = nt;
    if (nt && !p->plan.kernel_nt)
        throw std::runtime_error("no non-temporal kernel for this plan");
    impl_ = std::move(p);
}

void selgraph_forced_stores::run(const operands &o) const {
    si::execute_plan(impl_->plan, impl_->nd, o.cond, o.src0, o.src1, o.dst, 0,
                     impl_->nt ? si::store_override::nt
                               : si::store_override::regular);
}

std::string selgraph_forced_stores::label() const {
    return describe(impl_->plan);
}

compiled_select &compiled_for(const std::string &name,
                              const std::vector<int64_t> (&dims)[4], dtype t,
                              cpu_isa isa,
                              const std::vector<int64_t> (*strides)[4],
                              bool &fresh) {
    static std::map<std::string, compiled_select> cache;
    compiled_select &c = cache[name];
    fresh = !c.sg;
    if (fresh) {
        c.sg = std::make_unique<selgraph_select>(dims, t, strides);
        c.cp = c.sg->compile(isa);
    }
    return c;
}

int warmup_executes() {
    return 2 * si::store_tuner::max_window_executes
           + static_cast<int>(si::store_tuner::confirm);
}

void selgraph_select::bind(const operands &o) {
    in_ts_ = { selgraph::tensor(in_lts_[0], eng_,
                                const_cast<uint8_t *>(o.cond)),
               selgraph::tensor(in_lts_[1], eng_, const_cast<void *>(o.src0)),
               selgraph::tensor(in_lts_[2], eng_, const_cast<void *>(o.src1)) };
    out_ts_ = { selgraph::tensor(out_lts_[0], eng_, o.dst) };
}

void selgraph_select::execute(const selgraph::compiled_partition &cp) {
    cp.execute(strm_, in_ts_, out_ts_);
}

void selgraph_select::set_cache_capacity(int capacity) {
    selgraph::set_kernel_cache_capacity(capacity);
}

} // namespace sgbench
