#include "select_schema.hpp"

#include <algorithm>
#include <utility>

namespace selgraph {
namespace impl {

const char *const select_port_names[4] = { "cond", "src_0", "src_1", "dst" };

namespace {

// Types Select moves: every type with a byte width (Select copies bits).
bool is_select_value_type(data_type dt) {
    switch (dt) {
        case data_type::f64:
        case data_type::s64:
        case data_type::u64:
        case data_type::f32:
        case data_type::s32:
        case data_type::u32:
        case data_type::bf16:
        case data_type::f16:
        case data_type::s16:
        case data_type::u16:
        case data_type::s8:
        case data_type::u8:
        case data_type::f8_e5m2:
        case data_type::f8_e4m3:
        case data_type::boolean: return true;
        default: return false;
    }
}

const char *const value_types_str =
        "f64, s64, u64, f32, s32, u32, bf16, f16, s16, u16, s8, u8, "
        "f8_e5m2, f8_e4m3, boolean";

} // namespace

void verify_select_op(const op::impl &o) {
    if (o.inputs.size() != 3 || o.outputs.size() != 1)
        fail(status::invalid_graph_op, "Select op ", o.id, ": expects 3 ",
             "inputs (cond, src_0, src_1) and 1 output (dst), got ",
             o.inputs.size(), " inputs and ", o.outputs.size(), " outputs");
    for (const auto &kv : o.attrs) {
        if (kv.first == op::attr::axis) {
            if (!std::holds_alternative<int64_t>(kv.second))
                fail(status::invalid_graph_op, "Select op ", o.id,
                     ": attribute axis must be an int64_t (s64)");
            continue;
        }
        if (kv.first != op::attr::auto_broadcast)
            fail(status::invalid_graph_op, "Select op ", o.id, ": attribute ",
                 attr2str(kv.first),
                 " is not defined for Select (only auto_broadcast and axis ",
                 "are)");
        const auto *s = std::get_if<std::string>(&kv.second);
        if (!s)
            fail(status::invalid_graph_op, "Select op ", o.id,
                 ": attribute auto_broadcast must be a string");
        if (*s != "numpy" && *s != "none" && *s != "pdpd")
            fail(status::invalid_graph_op, "Select op ", o.id,
                 ": attribute auto_broadcast is '", *s,
                 "', expected 'numpy', 'none' or 'pdpd'");
    }
    if (o.attrs.count(op::attr::axis)
        && select_broadcast_mode(o) != broadcast_mode::pdpd)
        fail(status::invalid_graph_op, "Select op ", o.id, ": attribute axis (",
             std::get<int64_t>(o.attrs.at(op::attr::axis)),
             ") applies to auto_broadcast 'pdpd' only, but auto_broadcast is '",
             select_broadcast_mode(o) == broadcast_mode::none ? "none"
                                                              : "numpy",
             "'");
    const logical_tensor *lts[4] = { &o.inputs[0], &o.inputs[1], &o.inputs[2],
                                     &o.outputs[0] };
    const data_type cond_dt = lts[0]->get_data_type();
    if (cond_dt != data_type::boolean && cond_dt != data_type::u8)
        fail(status::invalid_data_type, "Select op ", o.id,
             ": port cond (logical tensor ", lts[0]->get_id(),
             ") has data type ", dtype2str(cond_dt),
             ", expected boolean or u8");
    const data_type dt = lts[1]->get_data_type();
    const bool nibbles = dt == data_type::s4 || dt == data_type::u4;
    if (!is_select_value_type(dt) && !nibbles)
        fail(status::invalid_data_type, "Select op ", o.id,
             ": port src_0 (logical tensor ", lts[1]->get_id(),
             ") has data type ", dtype2str(dt), ", expected one of ",
             value_types_str);
    for (int p = 2; p < 4; ++p) {
        if (lts[p]->get_data_type() != dt)
            fail(status::invalid_data_type, "Select op ", o.id, ": port ",
                 select_port_names[p], " (logical tensor ", lts[p]->get_id(),
                 ") has data type ", dtype2str(lts[p]->get_data_type()),
                 ", but src_0 has ", dtype2str(dt),
                 "; src_0, src_1 and dst must have one data type");
    }
    if (nibbles)
        fail(status::unimplemented, "Select op ", o.id,
             ": ports src_0, src_1 and dst (logical tensors ", lts[1]->get_id(),
             ", ", lts[2]->get_id(), ", ", lts[3]->get_id(),
             ") have data type ", dtype2str(dt),
             ": Select on packed 4-bit data (two elements per byte) is not "
             "implemented");
}

broadcast_mode select_broadcast_mode(const op::impl &o) {
    auto it = o.attrs.find(op::attr::auto_broadcast);
    if (it == o.attrs.end())
        return broadcast_mode::numpy;
    const std::string &s = std::get<std::string>(it->second);
    return s == "none"   ? broadcast_mode::none
           : s == "pdpd" ? broadcast_mode::pdpd
                         : broadcast_mode::numpy;
}

int64_t select_axis(const op::impl &o) {
    auto it = o.attrs.find(op::attr::axis);
    return it == o.attrs.end() ? -1 : std::get<int64_t>(it->second);
}

namespace {

// pdpd: lays input `b` (port `port`) onto `a` (src_0's shape, dst) from
// `axis`; returns the dst dim of b's dim 0. Throws invalid_shape.
int pdpd_place(size_t op_id, const char *port, const dims &b, const dims &a,
               int64_t axis) {
    const int64_t ra = static_cast<int64_t>(a.size());
    const int64_t rb = static_cast<int64_t>(b.size());
    if (axis < -1)
        fail(status::invalid_shape, "Select op ", op_id,
             ": auto_broadcast 'pdpd' with axis ", axis,
             ": the axis must be -1 (right-aligned) or a dim of src_0 ",
             dims2str(a), "; port ", port, " is ", dims2str(b));
    if (rb > ra)
        fail(status::invalid_shape, "Select op ", op_id,
             ": auto_broadcast 'pdpd' (axis ", axis, "): port ", port, " ",
             dims2str(b), " has more dimensions than src_0 ", dims2str(a),
             ", whose shape dst takes");
    const int64_t off = axis == -1 ? ra - rb : axis;
    int64_t len = rb; // trailing dims of 1 are ignored
    while (len > 0 && b[len - 1] == 1)
        --len;
    if (off > ra - len)
        fail(status::invalid_shape, "Select op ", op_id,
             ": auto_broadcast 'pdpd': port ", port, " ", dims2str(b),
             " laid onto src_0 ", dims2str(a), " from axis ", axis,
             " runs past src_0's last dim (dims ", off, " to ", off + len - 1,
             ", trailing 1s ignored)");
    for (int64_t j = 0; j < len; ++j)
        if (b[j] != 1 && b[j] != a[off + j])
            fail(status::invalid_shape, "Select op ", op_id,
                 ": auto_broadcast 'pdpd': port ", port, " ", dims2str(b),
                 " cannot be broadcast onto src_0 ", dims2str(a), " from axis ",
                 axis, ": its dim ", j, " (", b[j], ") lies on src_0's dim ",
                 off + j, " (", a[off + j], ") and must equal it or be 1");
    return static_cast<int>(off);
}

} // namespace

select_shapes infer_select_shapes(size_t op_id, broadcast_mode mode,
                                  int64_t axis, const dims &cond,
                                  const dims &src_0, const dims &src_1) {
    select_shapes r;
    if (mode == broadcast_mode::none) {
        if (cond != src_0 || src_0 != src_1)
            fail(status::invalid_shape, "Select op ", op_id,
                 ": auto_broadcast is 'none', so cond ", dims2str(cond),
                 ", src_0 ", dims2str(src_0), " and src_1 ", dims2str(src_1),
                 " must have equal shapes");
        r.dst = src_0;
        return r;
    }
    if (mode == broadcast_mode::pdpd) {
        // src_1 onto src_0, then cond onto the result (src_0's shape).
        r.dst = src_0;
        r.offset[2] = pdpd_place(op_id, "src_1", src_1, src_0, axis);
        r.offset[0] = pdpd_place(op_id, "cond", cond, src_0, axis);
        return r;
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
    const dims *in[3] = { &cond, &src_0, &src_1 };
    for (int p = 0; p < 3; ++p)
        r.offset[p] = static_cast<int>(rank - in[p]->size());
    r.dst = std::move(dst);
    return r;
}

} // namespace impl
} // namespace selgraph
