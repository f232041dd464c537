#ifndef SELGRAPH_SRC_PARTITION_IMPL_HPP
#define SELGRAPH_SRC_PARTITION_IMPL_HPP

#include "dispatch.hpp"
#include "op_impl.hpp"
#include "select_schema.hpp"

namespace selgraph {

struct partition::impl {
    size_t id = 0;
    engine::kind ekind = engine::kind::cpu;
    bool supported = false;
    op::impl sel_op; // a copy, taken at add_op
};

struct compiled_partition::impl {
    size_t op_id = 0;
    engine eng;
    logical_tensor
            ports[::selgraph::impl::n_operands]; // cond, src_0, src_1, dst
    ::selgraph::impl::select_nd nd;
    ::selgraph::impl::select_plan plan;
    size_t mem_size[::selgraph::impl::n_operands] = {}; // bytes each tensor
                                                        // spans
    std::vector<std::pair<size_t, size_t>> inplace;
    std::string verbose_desc; // "<dtypes>,<shapes>" for verbose lines
};

} // namespace selgraph

#endif
