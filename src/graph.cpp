#include <algorithm>
#include <atomic>
#include <set>

#include "json_graph.hpp"
#include "partition_impl.hpp"

namespace selgraph {

using namespace impl;

struct graph::impl {
    engine::kind ekind;
    bool finalized = false;
    std::vector<op::impl> ops;
    std::set<size_t> op_ids;
    std::set<size_t> produced; // logical tensor ids that an op outputs
};

graph::graph(engine::kind engine_kind)
    : impl_(std::make_shared<impl>()) {
    impl_->ekind = engine_kind;
}

status graph::add_op(const op &aop, bool allow_exception) {
    try {
        if (!aop.impl_)
            fail(status::invalid_arguments, "add_op: empty op handle");
        const op::impl &o = *aop.impl_;
        if (impl_->finalized)
            fail(status::invalid_graph, "add_op: ", op_kind2str(o.kind), " op ",
                 o.id, " added to a finalized graph");
        if (impl_->op_ids.count(o.id))
            fail(status::invalid_graph, "add_op: ", op_kind2str(o.kind), " op ",
                 o.id, ": op id ", o.id, " is already in the graph");
        for (const auto &out : o.outputs)
            for (const auto &in : o.inputs)
                if (out.get_id() == in.get_id())
                    fail(status::invalid_graph, "add_op: ", op_kind2str(o.kind),
                         " op ", o.id, ": logical tensor ", out.get_id(),
                         " is both an input and an output of the op");
        if (o.kind == op::kind::Select)
            verify_select_op(o);
        for (const auto &lt : o.outputs)
            if (impl_->produced.count(lt.get_id()))
                fail(status::invalid_graph, "add_op: ", op_kind2str(o.kind),
                     " op ", o.id, ": logical tensor ", lt.get_id(),
                     " is already the output of another op");
        for (const auto &lt : o.outputs)
            impl_->produced.insert(lt.get_id());
        impl_->op_ids.insert(o.id);
        impl_->ops.push_back(o);
    } catch (const error &e) {
        if (allow_exception)
            throw;
        return e.status;
    }
    return status::success;
}

void graph::finalize() {
    impl_->finalized = true;
    if (graph_dump_enabled("graph")) {
        static std::atomic<size_t> next_dump { 1 };
        json_graph g;
        g.engine_kind = impl_->ekind == engine::kind::gpu ? "gpu" : "cpu";
        for (const auto &o : impl_->ops)
            g.ops.push_back(to_json_op(o));
        infer_ports(g);
        dump_json_graph(g, "selgraph_graph_" + std::to_string(next_dump++)
                                   + ".json");
    }
}

bool graph::is_finalized() const {
    return impl_->finalized;
}

std::vector<partition> graph::get_partitions(partition::policy) {
    if (!impl_->finalized)
        fail(status::invalid_graph,
             "get_partitions: the graph must be finalized first");
    static std::atomic<size_t> next_id { 1 };
    std::vector<partition> parts;
    for (const auto &o : impl_->ops) {
        auto p = std::make_shared<partition::impl>();
        p->id = next_id++;
        p->ekind = impl_->ekind;
        p->supported =
                o.kind == op::kind::Select && impl_->ekind == engine::kind::cpu;
        p->sel_op = o;
        partition part;
        part.impl_ = std::move(p);
        parts.push_back(std::move(part));
    }
    return parts;
}

namespace {
const partition::impl &get(const std::shared_ptr<const partition::impl> &p) {
    if (!p)
        fail(status::invalid_arguments,
             "partition: empty partition (default-constructed)");
    return *p;
}
} // namespace

bool partition::is_supported() const {
    return get(impl_).supported;
}
std::vector<size_t> partition::get_ops() const {
    return { get(impl_).sel_op.id };
}
size_t partition::get_ops_num() const {
    get(impl_);
    return 1; // one op per partition
}
size_t partition::get_id() const {
    return get(impl_).id;
}
engine::kind partition::get_engine_kind() const {
    return get(impl_).ekind;
}
std::vector<logical_tensor> partition::get_input_ports() const {
    return get(impl_).sel_op.inputs;
}
std::vector<logical_tensor> partition::get_output_ports() const {
    return get(impl_).sel_op.outputs;
}

} // namespace selgraph
