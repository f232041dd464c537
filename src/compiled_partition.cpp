// partition::compile (validation of the compile-time logical tensors, shape
// inference, broadcast folding, kernel dispatch) and compiled_partition::
// execute (validation of the tensors, then the kernel).
#include <algorithm>

#include "broadcast.hpp"
#include "json_graph.hpp"
#include "partition_impl.hpp"
#include "verbose.hpp"

namespace selgraph {

using namespace impl;

namespace {

// Element strides as oneDNN's verbose writes them: 65536s256s1, "" for 0-D.
std::string strides_str(const logical_tensor &lt) {
    std::string s;
    if (lt.get_layout_type() != layout_type::strided)
        return s;
    const auto st = lt.get_strides();
    for (size_t i = 0; i < st.size(); ++i) {
        if (i)
            s += "s";
        s += std::to_string(st[i]);
    }
    return s;
}

std::string shape_str(const logical_tensor &lt) {
    // oneDNN verbose style: 2x3x4, "" for 0-D.
    std::string s;
    const auto d = lt.get_dims();
    for (size_t i = 0; i < d.size(); ++i) {
        if (i)
            s += "x";
        s += std::to_string(d[i]);
    }
    return s;
}

// Validates a compile-time input and returns its dims.
dims check_input(size_t op_id, int port, const logical_tensor &lt,
                 const logical_tensor &declared) {
    const char *pn = select_port_names[port];
    if (lt.get_data_type() != declared.get_data_type())
        fail(status::invalid_data_type, "Select op ", op_id, ": port ", pn,
             " (logical tensor ", lt.get_id(), ") is compiled with ",
             dtype2str(lt.get_data_type()), " but was added as ",
             dtype2str(declared.get_data_type()));
    if (lt.get_ndims() < 0)
        fail(status::invalid_shape, "Select op ", op_id, ": port ", pn,
             " (logical tensor ", lt.get_id(),
             ") has an unknown rank at compile");
    const dims d = lt.get_dims();
    if (std::any_of(d.begin(), d.end(), [](dim x) { return x < 0; }))
        fail(status::invalid_shape, "Select op ", op_id, ": port ", pn,
             " (logical tensor ", lt.get_id(), ") has unknown dims ",
             dims2str(d), " at compile");
    if (lt.get_layout_type() == layout_type::opaque)
        fail(status::unimplemented, "Select op ", op_id, ": port ", pn,
             " (logical tensor ", lt.get_id(),
             ") has an opaque layout; only strided layouts are supported");
    if (lt.get_layout_type() == layout_type::strided) {
        const dims s = lt.get_strides();
        for (size_t i = 0; i < s.size(); ++i)
            if (s[i] < 0)
                fail(status::invalid_shape, "Select op ", op_id, ": port ", pn,
                     " (logical tensor ", lt.get_id(), ") dims ", dims2str(d),
                     " have negative strides ", dims2str(s));
    }
    return d;
}

// Dense row-major element strides. Callers check element counts first;
// saturate anyway rather than overflow.
dims dense_strides(const dims &d) {
    dims s(d.size());
    dim acc = 1;
    for (size_t i = d.size(); i-- > 0;) {
        s[i] = acc;
        if (!mul_ok(acc, std::max<dim>(d[i], 1), acc))
            acc = INT64_MAX;
    }
    return s;
}

// Element strides of `lt`: its own when strided with known strides, else
// dense row-major.
dims strides_of(const logical_tensor &lt, const dims &d) {
    if (lt.get_layout_type() == layout_type::strided) {
        dims s = lt.get_strides();
        if (std::all_of(s.begin(), s.end(), [](dim x) { return x >= 0; }))
            return s;
    }
    return dense_strides(d);
}

// The dim of `d` (strides `s`) whose elements would share offsets with the
// dims inside it, or -1 when none does. Checks the sufficient condition that,
// with dims sorted by stride, each stride exceeds the span of the dims inside
// it: every dense, padded or permuted layout passes, a stride 0 never does.
int overlapping_dim(const dims &d, const dims &s) {
    std::vector<std::pair<dim, int>> v; // (stride, dim index)
    for (size_t i = 0; i < d.size(); ++i)
        if (d[i] > 1)
            v.emplace_back(s[i], static_cast<int>(i));
    std::sort(v.begin(), v.end());
    int64_t span = 0; // max offset reached by the dims so far
    for (const auto &si : v) {
        int64_t ext;
        if (si.first <= span || !mul_ok(si.first, d[si.second] - 1, ext)
            || !add_ok(span, ext, span))
            return si.second;
    }
    return -1;
}

const logical_tensor *find_id(const std::vector<logical_tensor> &lts,
                              size_t id) {
    for (const auto &lt : lts)
        if (lt.get_id() == id)
            return &lt;
    return nullptr;
}

} // namespace

compiled_partition
partition::compile(const std::vector<logical_tensor> &inputs,
                   const std::vector<logical_tensor> &outputs,
                   const engine &e) const {
    if (!impl_)
        fail(status::invalid_arguments,
             "compile: empty partition (default-constructed)");
    const partition::impl &p = *impl_;
    const op::impl &o = p.sel_op;
    const double t0 = verbose_level() >= 2 ? now_ms() : 0.0;
    if (!p.supported)
        fail(status::unimplemented, "compile: partition ", p.id, " (",
             op_kind2str(o.kind), " op ", o.id,
             ") is not supported by the selgraph backend");
    if (!e || e.get_kind() != p.ekind)
        fail(status::invalid_arguments, "compile: Select op ", o.id,
             ": the engine is empty or not a CPU engine");
    if (inputs.size() > 3 || outputs.size() != 1)
        fail(status::invalid_arguments, "compile: Select op ", o.id,
             ": expects at most 3 input and 1 output logical tensors, got ",
             inputs.size(), " and ", outputs.size());

    auto cp = std::make_shared<compiled_partition::impl>();
    cp->op_id = o.id;
    cp->eng = e;
    const logical_tensor *declared[n_operands] = { &o.inputs[0], &o.inputs[1],
                                                   &o.inputs[2],
                                                   &o.outputs[0] };
    dims in_dims[3];
    for (int port = 0; port < 3; ++port) {
        const logical_tensor *lt = find_id(inputs, declared[port]->get_id());
        if (!lt)
            fail(status::invalid_arguments, "compile: Select op ", o.id,
                 ": no input logical tensor with id ", declared[port]->get_id(),
                 " (port ", select_port_names[port], ")");
        in_dims[port] = check_input(o.id, port, *lt, *declared[port]);
        cp->ports[port] = *lt;
    }

    for (const auto &lt : inputs) {
        bool known = false;
        for (int port = 0; port < 3; ++port)
            known = known || lt.get_id() == declared[port]->get_id();
        if (!known)
            fail(status::invalid_arguments, "compile: Select op ", o.id,
                 ": logical tensor ", lt.get_id(),
                 " is not an input of the partition");
    }
    const broadcast_mode mode = select_broadcast_mode(o);
    const select_shapes shapes = infer_select_shapes(
            o.id, mode, select_axis(o), in_dims[0], in_dims[1], in_dims[2]);
    const dims &dst_dims = shapes.dst;
    {
        // Element counts must fit in 64 bits, with headroom for the bytes
        // moved per element; an empty dst never overflows.
        const bool empty = std::any_of(dst_dims.begin(), dst_dims.end(),
                                       [](dim x) { return x == 0; });
        int64_t n = 1;
        bool ok = true;
        for (dim d : dst_dims)
            ok = ok && mul_ok(n, d, n);
        if (!empty && (!ok || !mul_ok(n, 32, n)))
            fail(status::invalid_shape, "Select op ", o.id, ": port dst ",
                 dims2str(dst_dims), " (the broadcast of cond ",
                 dims2str(in_dims[0]), ", src_0 ", dims2str(in_dims[1]),
                 " and src_1 ", dims2str(in_dims[2]),
                 ") has more elements than 64-bit sizes hold");
    }

    // dst: known dims must match, unknown ones are inferred.
    const logical_tensor &out = outputs[0];
    if (out.get_id() != declared[op_dst]->get_id())
        fail(status::invalid_arguments, "compile: Select op ", o.id,
             ": output logical tensor id ", out.get_id(),
             " is not the dst port (id ", declared[op_dst]->get_id(), ")");
    if (out.get_data_type() != declared[op_dst]->get_data_type())
        fail(status::invalid_data_type, "Select op ", o.id,
             ": port dst (logical tensor ", out.get_id(), ") is compiled with ",
             dtype2str(out.get_data_type()), " but was added as ",
             dtype2str(declared[op_dst]->get_data_type()));
    if (out.get_layout_type() == layout_type::opaque)
        fail(status::unimplemented, "Select op ", o.id, ": port dst (",
             "logical tensor ", out.get_id(),
             ") has an opaque layout; only strided layouts are supported");
    if (out.get_ndims() >= 0) {
        const dims given = out.get_dims();
        bool match = given.size() == dst_dims.size();
        for (size_t i = 0; match && i < given.size(); ++i)
            match = given[i] < 0 || given[i] == dst_dims[i];
        if (!match)
            fail(status::invalid_shape, "Select op ", o.id, ": port dst ",
                 "(logical tensor ", out.get_id(), ") is given as ",
                 dims2str(given), " but cond ", dims2str(in_dims[0]),
                 ", src_0 ", dims2str(in_dims[1]), " and src_1 ",
                 dims2str(in_dims[2]), " give ", dims2str(dst_dims));
    }
    const bool dst_strided = out.get_layout_type() == layout_type::strided
                             && out.get_ndims() >= 0;
    dims dst_strides;
    if (dst_strided) {
        const dims s = out.get_strides();
        const bool known =
                std::all_of(s.begin(), s.end(), [](dim x) { return x >= 0; });
        const bool unknown = std::all_of(s.begin(), s.end(), is_unknown_dim);
        if (!known && !unknown)
            fail(status::invalid_shape, "Select op ", o.id, ": port dst ",
                 "(logical tensor ", out.get_id(), ") dims ",
                 dims2str(dst_dims), " have negative or partly unknown ",
                 "strides ", dims2str(s));
        if (known) {
            const int bad = overlapping_dim(dst_dims, s);
            if (bad >= 0)
                fail(status::invalid_shape, "Select op ", o.id,
                     ": port dst (logical tensor ", out.get_id(), ") dims ",
                     dims2str(dst_dims), " with strides ", dims2str(s),
                     " overlap: dimension ", bad, " has stride ", s[bad],
                     ", within the span of the dims inside it; each dst ",
                     "element needs its own memory");
            dst_strides = s;
        }
    }
    if (dst_strides.empty())
        dst_strides = dense_strides(dst_dims);
    cp->ports[op_dst] =
            dst_dims.empty() ? logical_tensor(out.get_id(), out.get_data_type(),
                                              dst_dims, layout_type::strided,
                                              out.get_property_type())
                             : logical_tensor(out.get_id(), out.get_data_type(),
                                              dst_dims, dst_strides,
                                              out.get_property_type());

    // Byte sizes must fit in 64 bits (get_mem_size checks and names the
    // tensor; prefix the op and port).
    for (int i = 0; i < n_operands; ++i) {
        try {
            cp->mem_size[i] = cp->ports[i].get_mem_size();
        } catch (const error &err) {
            fail(status::invalid_shape, "Select op ", o.id, ": port ",
                 select_port_names[i], ": ", err.what());
        }
    }

    // The N-d problem: operands placed on dst as shape inference says
    // (right-aligned, or at pdpd's axis), stride 0 where broadcast.
    select_nd &nd = cp->nd;
    nd.ndims = static_cast<int>(dst_dims.size());
    nd.elem_size = static_cast<int>(dtype_size(out.get_data_type()));
    for (int i = 0; i < nd.ndims; ++i)
        nd.dims[i] = dst_dims[i];
    for (int port = 0; port < n_operands; ++port) {
        const dims d = port < 3 ? in_dims[port] : dst_dims;
        const dims s = port < 3 ? strides_of(cp->ports[port], d) : dst_strides;
        const int shift = port < 3 ? shapes.offset[port] : 0;
        const int n = static_cast<int>(d.size());
        for (int i = 0; i < nd.ndims; ++i) {
            const int j = i - shift;
            nd.strides[port][i] = (j < 0 || j >= n || d[j] == 1) ? 0 : s[j];
        }
    }
    cp->plan = plan_select(nd, select_touched_bytes(nd));

    // In-place: src_0 with exactly dst's shape, type and layout.
    if (in_dims[1] == dst_dims
        && strides_of(cp->ports[1], in_dims[1]) == dst_strides)
        cp->inplace.emplace_back(declared[1]->get_id(), out.get_id());

    const std::string dt = dtype2str(out.get_data_type());
    cp->verbose_desc =
            "cond:" + std::string(dtype2str(cp->ports[0].get_data_type()))
            + " src_0:" + dt + " src_1:" + dt + " dst:" + dt + ",cond:"
            + shape_str(cp->ports[0]) + " src_0:" + shape_str(cp->ports[1])
            + " src_1:" + shape_str(cp->ports[2]) + " dst:"
            + shape_str(cp->ports[3]) + ",cond:" + strides_str(cp->ports[0])
            + " src_0:" + strides_str(cp->ports[1]) + " src_1:"
            + strides_str(cp->ports[2]) + " dst:" + strides_str(cp->ports[3]);
    if (verbose_level() >= 2)
        verbose_print(std::string("selgraph_verbose,compile,cpu,select,")
                      + cp->plan.impl_str() + "," + cp->plan.kernel_str() + ","
                      + cp->verbose_desc + "," + folded2str(cp->plan.folded)
                      + "," + (cp->plan.cache_hit ? "cache_hit" : "cache_miss")
                      + "," + std::to_string(now_ms() - t0));

    if (graph_dump_enabled("subgraph")) {
        // The partition as compiled: the compile-time inputs, dst inferred.
        json_graph g;
        json_op jo = to_json_op(o);
        jo.inputs.assign(cp->ports, cp->ports + op_dst);
        jo.outputs.assign(1, cp->ports[op_dst]);
        g.ops.push_back(std::move(jo));
        infer_ports(g);
        dump_json_graph(g,
                        "selgraph_partition_" + std::to_string(p.id) + ".json");
    }

    compiled_partition result;
    result.impl_ = std::move(cp);
    return result;
}

logical_tensor compiled_partition::query_logical_tensor(size_t tid) const {
    if (!impl_)
        fail(status::invalid_arguments,
             "query_logical_tensor: empty compiled partition");
    for (const auto &lt : impl_->ports)
        if (lt.get_id() == tid)
            return lt;
    fail(status::invalid_arguments, "query_logical_tensor: Select op ",
         impl_->op_id, " has no port with logical tensor id ", tid);
}

std::vector<std::pair<size_t, size_t>>
compiled_partition::get_inplace_ports() const {
    if (!impl_)
        fail(status::invalid_arguments,
             "get_inplace_ports: empty compiled partition");
    return impl_->inplace;
}

void compiled_partition::execute(stream &astream,
                                 const std::vector<tensor> &inputs,
                                 const std::vector<tensor> &outputs) const {
    if (!impl_)
        fail(status::invalid_arguments, "execute: empty compiled partition");
    const impl &cp = *impl_;
    if (!astream)
        fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
             ": empty stream");
    if (astream.get_engine().get_kind() != cp.eng.get_kind())
        fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
             ": the stream's engine is not the compiled partition's kind");
    if (inputs.size() > 3 || outputs.size() != 1)
        fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
             ": expects at most 3 input tensors and 1 output tensor, got ",
             inputs.size(), " and ", outputs.size());
    const void *handles[n_operands] = {};
    bool seen[n_operands] = {};
    // Tensors bind to ports by logical tensor id. One id may serve several
    // ports (Select(c, x, x)): each tensor takes the first free port with
    // its id, and a port left free shares the tensor of its id.
    auto bind = [&](const tensor &t, int first, int last) {
        // Members, not getters: the getters copy and allocate, and execute
        // must stay cheap for small tensors.
        const logical_tensor &lt = t.lt_;
        int port = -1, known_port = -1;
        for (int i = first; i < last && port < 0; ++i) {
            if (cp.ports[i].get_id() != lt.get_id())
                continue;
            if (known_port < 0)
                known_port = i;
            if (!seen[i])
                port = i;
        }
        const bool id_known = known_port >= 0;
        if (!id_known)
            fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                 ": logical tensor id ", lt.get_id(), " is not an ",
                 first < op_dst ? "input" : "output",
                 " of the compiled partition");
        if (port < 0)
            fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                 ": port ", select_port_names[known_port], " (logical tensor ",
                 lt.get_id(), ") is given twice");
        const char *pn = select_port_names[port];
        // A host scalar lives on the host and has no engine.
        const bool host = lt.get_property_type()
                          == logical_tensor::property_type::host_scalar;
        if (!host && (!t.engine_ || t.engine_.get_kind() != cp.eng.get_kind()))
            fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                 ": port ", pn, " (logical tensor ", lt.get_id(),
                 ") tensor's engine is empty or not ",
                 "the compiled partition's kind");
        if (lt.ndims_ >= 0) {
            const logical_tensor &want = cp.ports[port];
            bool ok = lt.ndims_ == want.ndims_;
            for (int i = 0; ok && i < lt.ndims_; ++i)
                ok = lt.dims_[i] < 0 || lt.dims_[i] == want.dims_[i];
            if (!ok)
                fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                     ": port ", pn, " (logical tensor ", lt.get_id(),
                     ") tensor has dims ", dims2str(lt.dims_, lt.ndims_),
                     " but was compiled with ",
                     dims2str(want.dims_, want.ndims_));
        }
        if (!t.get_data_handle() && cp.mem_size[port] != 0)
            fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                 ": port ", pn, " (logical tensor ", lt.get_id(),
                 ") has a null data handle for ", cp.mem_size[port], " bytes");
        // Elements are accessed as whole 2-, 4- or 8-byte words, as in
        // oneDNN.
        const auto align =
                static_cast<size_t>(operand_bytes(port, cp.nd.elem_size));
        if (reinterpret_cast<uintptr_t>(t.get_data_handle()) % align != 0)
            fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                 ": port ", pn, " (logical tensor ", lt.get_id(),
                 ") data handle ", t.get_data_handle(),
                 " is not aligned to its ", align, "-byte elements");
        seen[port] = true;
        handles[port] = t.get_data_handle();
    };
    for (const auto &t : inputs)
        bind(t, 0, 3);
    bind(outputs[0], 3, 4);
    for (int port = 0; port < n_operands; ++port) {
        // A free input port shares the tensor bound to another port of its id.
        for (int other = 0; port < op_dst && other < op_dst; ++other)
            if (!seen[port] && seen[other]
                && cp.ports[other].get_id() == cp.ports[port].get_id()) {
                seen[port] = true;
                handles[port] = handles[other];
            }
        if (!seen[port])
            fail(status::invalid_arguments, "execute: Select op ", cp.op_id,
                 ": expects tensors for 3 input ports and 1 output port, got ",
                 inputs.size(), " and ", outputs.size(), ", and none for port ",
                 select_port_names[port], " (logical tensor ",
                 cp.ports[port].get_id(), ")");
    }

    const int vlevel = verbose_level();
    const double t0 = vlevel ? now_ms() : 0.0;
    const executed ran =
            execute_plan(cp.plan, cp.nd, handles[op_cond], handles[op_src0],
                         handles[op_src1], const_cast<void *>(handles[op_dst]));
    if (vlevel)
        verbose_print(std::string("selgraph_verbose,exec,cpu,select,")
                      + cp.plan.impl_str() + "," + cp.plan.kernel_str(ran) + ","
                      + cp.verbose_desc + "," + std::to_string(now_ms() - t0));
}

} // namespace selgraph
