#include "select_schema.hpp"

#include <algorithm>

namespace selgraph {
namespace impl {

const char *const select_port_names[4] = { "cond", "src_0", "src_1", "dst" };

namespace {

bool is_select_value_type(data_type dt) {
    return dt == data_type::f32 || dt == data_type::bf16
           || dt == data_type::f16;
}

} // namespace

void verify_select_op(const op::impl &o) {
    if (o.inputs.size() != 3 || o.outputs.size() != 1)
        fail(status::invalid_graph_op, "Select op ", o.id, ": expects 3 ",
             "inputs (cond, src_0, src_1) and 1 output (dst), got ",
             o.inputs.size(), " inputs and ", o.outputs.size(), " outputs");
    for (const auto &kv : o.attrs) {
        if (kv.first != op::attr::auto_broadcast)
            fail(status::invalid_graph_op, "Select op ", o.id, ": attribute ",
                 attr2str(kv.first),
                 " is not defined for Select (only auto_broadcast is)");
        const auto *s = std::get_if<std::string>(&kv.second);
        if (!s)
            fail(status::invalid_graph_op, "Select op ", o.id,
                 ": attribute auto_broadcast must be a string");
        if (*s != "numpy" && *s != "none")
            fail(status::invalid_graph_op, "Select op ", o.id,
                 ": attribute auto_broadcast is '", *s,
                 "', expected 'numpy' or 'none'");
    }
    const logical_tensor *lts[4] = { &o.inputs[0], &o.inputs[1], &o.inputs[2],
                                     &o.outputs[0] };
    const data_type cond_dt = lts[0]->get_data_type();
    if (cond_dt != data_type::boolean)
        fail(status::invalid_data_type, "Select op ", o.id,
             ": port cond (logical tensor ", lts[0]->get_id(),
             ") has data type ", dtype2str(cond_dt), ", expected boolean");
    const data_type dt = lts[1]->get_data_type();
    if (!is_select_value_type(dt))
        fail(status::invalid_data_type, "Select op ", o.id,
             ": port src_0 (logical tensor ", lts[1]->get_id(),
             ") has data type ", dtype2str(dt),
             ", expected one of f32, bf16, f16");
    for (int p = 2; p < 4; ++p) {
        if (lts[p]->get_data_type() != dt)
            fail(status::invalid_data_type, "Select op ", o.id, ": port ",
                 select_port_names[p], " (logical tensor ", lts[p]->get_id(),
                 ") has data type ", dtype2str(lts[p]->get_data_type()),
                 ", but src_0 has ", dtype2str(dt),
                 "; src_0, src_1 and dst must have one data type");
    }
}

broadcast_mode select_broadcast_mode(const op::impl &o) {
    auto it = o.attrs.find(op::attr::auto_broadcast);
    if (it == o.attrs.end())
        return broadcast_mode::numpy;
    return std::get<std::string>(it->second) == "none" ? broadcast_mode::none
                                                       : broadcast_mode::numpy;
}

dims infer_select_dst_shape(size_t op_id, broadcast_mode mode, const dims &cond,
                            const dims &src_0, const dims &src_1) {
    if (mode == broadcast_mode::none) {
        if (cond != src_0 || src_0 != src_1)
            fail(status::invalid_shape, "Select op ", op_id,
                 ": auto_broadcast is 'none', so cond ", dims2str(cond),
                 ", src_0 ", dims2str(src_0), " and src_1 ", dims2str(src_1),
                 " must have equal shapes");
        return src_0;
    }
    // Step 1: numpy broadcast of src_0 and src_1.
    const size_t rank = std::max(src_0.size(), src_1.size());
    dims dst(rank);
    for (size_t i = 0; i < rank; ++i) {
        const dim a =
                i < rank - src_0.size() ? 1 : src_0[i - (rank - src_0.size())];
        const dim b =
                i < rank - src_1.size() ? 1 : src_1[i - (rank - src_1.size())];
        if (a != b && a != 1 && b != 1)
            fail(status::invalid_shape, "Select op ", op_id, ": src_0 ",
                 dims2str(src_0), " and src_1 ", dims2str(src_1),
                 " cannot be broadcast to each other (dimension ", i,
                 " of the aligned shapes: ", a, " vs ", b, ")");
        dst[i] = a == 1 ? b : a;
    }
    // Step 2: one-way broadcast of cond to dst.
    if (cond.size() > rank)
        fail(status::invalid_shape, "Select op ", op_id, ": cond ",
             dims2str(cond), " has more dimensions than the broadcast ",
             "shape ", dims2str(dst), " of src_0 ", dims2str(src_0),
             " and src_1 ", dims2str(src_1), "; cond may not enlarge dst");
    for (size_t i = 0; i < cond.size(); ++i) {
        const dim c = cond[i];
        const dim d = dst[rank - cond.size() + i];
        if (c != d && c != 1)
            fail(status::invalid_shape, "Select op ", op_id, ": cond ",
                 dims2str(cond), " cannot be one-way broadcast to ",
                 dims2str(dst), " (the broadcast shape of src_0 ",
                 dims2str(src_0), " and src_1 ", dims2str(src_1),
                 "): each cond dim must equal dst's or be 1");
    }
    return dst;
}

} // namespace impl
} // namespace selgraph
