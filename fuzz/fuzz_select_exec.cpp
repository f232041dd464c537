// libFuzzer target: a Select built from fuzzed types, shapes, strides and
// attributes, compiled and executed; every result that executes is compared
// bit for bit with the independent reference (tools/select_reference.hpp).
// Invalid descriptions must throw selgraph::error; a mismatch aborts.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "selgraph/selgraph.hpp"
#include "tools/select_reference.hpp"

namespace {

using lt = selgraph::logical_tensor;
using dt = lt::data_type;

struct reader {
    const uint8_t *p;
    size_t n;
    uint8_t byte() {
        if (!n)
            return 0;
        --n;
        return *p++;
    }
};

const dt types[] = { dt::f64, dt::s64,  dt::u64,     dt::f32,     dt::s32,
                     dt::u32, dt::bf16, dt::f16,     dt::s16,     dt::u16,
                     dt::s8,  dt::u8,   dt::boolean, dt::f8_e5m2, dt::f8_e4m3,
                     dt::s4,  dt::undef };

size_t size_of(dt t) {
    switch (t) {
        case dt::f64:
        case dt::s64:
        case dt::u64: return 8;
        case dt::f32:
        case dt::s32:
        case dt::u32: return 4;
        case dt::bf16:
        case dt::f16:
        case dt::s16:
        case dt::u16: return 2;
        case dt::s4:
        case dt::undef: return 0;
        default: return 1;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r { data, size };
    const dt t = types[r.byte() % (sizeof(types) / sizeof(types[0]))];
    const dt ct = (r.byte() & 7) == 0 ? dt::u8 : dt::boolean;
    const uint8_t mode_b = r.byte();
    const char *modes[] = { "numpy", "none", "pdpd", nullptr };
    const char *mode = modes[mode_b % 4];
    const bool pdpd = mode_b % 4 == 2;
    const bool has_axis = pdpd && (r.byte() & 1);
    // The axis the op gets (pdpd's default is -1, right-aligned).
    const int64_t axis = has_axis ? static_cast<int64_t>(r.byte() % 7) - 2 : -1;
    const int nd = r.byte() % 6;
    std::vector<int64_t> full(nd);
    for (auto &d : full)
        d = r.byte() % 6;
    // Each operand: a suffix of dst's dims (or a leading part under pdpd),
    // some dims turned to 1, dense or permuted or padded strides.
    lt ports[3];
    std::vector<int64_t> shapes[3], strides[3];
    for (int p = 0; p < 3; ++p) {
        const uint8_t form = r.byte();
        int rank = nd - (form % (nd + 1) == 0 ? 0 : r.byte() % (nd + 1));
        if (p == 1 && pdpd)
            rank = nd;
        const int off =
                (pdpd && p != 1 && axis >= 0)
                        ? std::min<int>(static_cast<int>(axis), nd - rank)
                        : nd - rank;
        std::vector<int64_t> s(full.begin() + off, full.begin() + off + rank);
        for (auto &d : s)
            if (r.byte() % 3 == 0)
                d = 1;
        if (r.byte() % 16 == 0 && !s.empty())
            s[r.byte() % s.size()] = r.byte() % 4; // maybe incompatible
        std::vector<int64_t> st(s.size());
        int64_t acc = 1 + (r.byte() % 4 == 0 ? r.byte() % 3 : 0); // padding
        std::vector<int> order(s.size());
        for (size_t i = 0; i < order.size(); ++i)
            order[i] = static_cast<int>(order.size() - 1 - i);
        if (r.byte() % 4 == 0 && order.size() >= 2)
            std::swap(order[0], order[order.size() - 1]);
        for (int i : order) {
            st[i] = acc;
            acc *= std::max<int64_t>(s[i], 1);
        }
        shapes[p] = s;
        strides[p] = st;
        const dt pt = p == 0 ? ct : t;
        const bool scalar = p == 2 && s.empty() && r.byte() % 4 == 0;
        ports[p] = lt(static_cast<size_t>(p), pt, s, st,
                      scalar ? lt::property_type::host_scalar
                             : lt::property_type::undef);
    }
    const lt dst(3, t, lt::layout_type::any);

    selgraph::engine eng(selgraph::engine::kind::cpu, 0);
    selgraph::stream strm(eng);
    selgraph::compiled_partition cp;
    try {
        selgraph::op o(1, selgraph::op::kind::Select,
                       { ports[0], ports[1], ports[2] }, { dst });
        if (mode)
            o.set_attr(selgraph::op::attr::auto_broadcast, mode);
        if (has_axis)
            o.set_attr<int64_t>(selgraph::op::attr::axis, axis);
        selgraph::graph g(selgraph::engine::kind::cpu);
        g.add_op(o);
        g.finalize();
        cp = g.get_partitions()[0].compile({ ports[0], ports[1], ports[2] },
                                           { dst }, eng);
    } catch (const selgraph::error &) {
        return 0; // rejected with an error: fine
    }
    const lt d = cp.query_logical_tensor(3);
    const size_t es = size_of(t);
    std::vector<selgraph::tensor> ins;
    const void *ptr[3];
    for (int p = 0; p < 3; ++p) {
        const size_t bytes = ports[p].get_mem_size();
        std::vector<uint8_t> v(bytes);
        for (size_t i = 0; i < bytes; ++i)
            v[i] = p == 0 ? r.byte() & 1 : static_cast<uint8_t>(r.byte() + i);
        if (ports[p].get_property_type() == lt::property_type::host_scalar)
            ins.push_back(
                    selgraph::tensor::make_scalar_tensor(ports[p], v.data()));
        else {
            ins.emplace_back(ports[p], eng);
            if (bytes)
                std::memcpy(ins.back().get_data_handle(), v.data(), bytes);
        }
        ptr[p] = ins.back().get_data_handle();
    }
    selgraph::tensor out(d, eng);
    const size_t dbytes = d.get_mem_size();
    std::memset(out.get_data_handle(), 0x5a, dbytes);
    cp.execute(strm, ins, { out }); // a compiled partition must execute
    const std::string m = mode ? mode : "numpy";
    selgraph_tools::ref_operand ops[3];
    const int dnd = d.get_ndims();
    for (int p = 0; p < 3; ++p) {
        ops[p].shape = shapes[p];
        ops[p].strides = strides[p];
        ops[p].offset =
                selgraph_tools::ref_offset(m, axis, p == 1, shapes[p], dnd);
    }
    std::vector<uint8_t> want(dbytes, 0x5a);
    selgraph_tools::ref_select(d.get_dims(), d.get_strides(), ops, ptr, es,
                               want.data());
    if (dbytes
        && std::memcmp(want.data(), out.get_data_handle(), dbytes) != 0) {
        std::fprintf(stderr, "mismatch: type %d mode %s axis %lld dst %d-D\n",
                     static_cast<int>(t), m.c_str(),
                     static_cast<long long>(axis), dnd);
        for (int p = 0; p < 3; ++p) {
            std::fprintf(stderr, "  operand %d:", p);
            for (size_t i = 0; i < shapes[p].size(); ++i)
                std::fprintf(stderr, " %lld/%lld",
                             static_cast<long long>(shapes[p][i]),
                             static_cast<long long>(strides[p][i]));
            std::fprintf(stderr, "\n");
        }
        std::abort();
    }
    return 0;
}
