#include "json_graph.hpp"

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace selgraph {
namespace impl {

using json = nlohmann::json;

namespace {

// Where a field is: "graph[2] (op 7, MatMul): inputs[1].dtype".
struct ctx {
    std::string where;
};

[[noreturn]] void bad(status s, const ctx &c, const std::string &field,
                      const std::string &why) {
    fail(s, "graph JSON: ", c.where, c.where.empty() ? "" : ": ", field, ": ",
         why);
}

std::string type_name(const json &v) {
    return v.type_name();
}

const json &member(const json &obj, const char *key, const ctx &c,
                   const std::string &field) {
    auto it = obj.find(key);
    if (it == obj.end())
        bad(status::invalid_arguments, c, field, "missing");
    return *it;
}

int64_t as_int(const json &v, const ctx &c, const std::string &field) {
    if (v.is_number_integer()) {
        if (v.is_number_unsigned()
            && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            bad(status::invalid_arguments, c, field,
                "value " + std::to_string(v.get<uint64_t>())
                        + " does not fit in 64-bit signed integer");
        return v.get<int64_t>();
    }
    bad(status::invalid_arguments, c, field,
        "expected an integer, got " + type_name(v));
}

size_t as_id(const json &v, const ctx &c, const std::string &field) {
    if (!v.is_number_unsigned())
        bad(status::invalid_arguments, c, field,
            "expected a non-negative integer id, got "
                    + (v.is_number_integer() ? std::to_string(v.get<int64_t>())
                                             : type_name(v)));
    return static_cast<size_t>(v.get<uint64_t>());
}

const std::string &as_str(const json &v, const ctx &c,
                          const std::string &field) {
    if (!v.is_string())
        bad(status::invalid_arguments, c, field,
            "expected a string, got " + type_name(v));
    return v.get_ref<const std::string &>();
}

const json &as_array(const json &v, const ctx &c, const std::string &field) {
    if (!v.is_array())
        bad(status::invalid_arguments, c, field,
            "expected an array, got " + type_name(v));
    return v;
}

float as_float(const json &v, const ctx &c, const std::string &field) {
    if (!v.is_number())
        bad(status::invalid_arguments, c, field,
            "expected a number, got " + type_name(v));
    return v.get<float>();
}

dims as_dims(const json &v, const ctx &c, const std::string &field) {
    as_array(v, c, field);
    if (v.size() > static_cast<size_t>(logical_tensor::max_ndims))
        bad(status::invalid_shape, c, field,
            std::to_string(v.size()) + " dimensions, at most "
                    + std::to_string(logical_tensor::max_ndims)
                    + " are supported");
    dims d;
    for (size_t i = 0; i < v.size(); ++i)
        d.push_back(as_int(v[i], c, field + "[" + std::to_string(i) + "]"));
    return d;
}

logical_tensor::layout_type str2layout(const std::string &s, const ctx &c,
                                       const std::string &field) {
    for (auto l : { layout_type::undef, layout_type::any, layout_type::strided,
                    layout_type::opaque })
        if (s == layout2str(l))
            return l;
    bad(status::invalid_arguments, c, field,
        "unknown layout type '" + s
                + "' (undef, any, strided or opaque expected)");
}

const char *property2str(logical_tensor::property_type p) {
    using pt = logical_tensor::property_type;
    switch (p) {
        case pt::undef: return "undef";
        case pt::variable: return "variable";
        case pt::constant: return "constant";
        case pt::host_scalar: return "host_scalar";
    }
    return "undef";
}

logical_tensor::property_type str2property(const std::string &s, const ctx &c,
                                           const std::string &field) {
    using pt = logical_tensor::property_type;
    for (auto p : { pt::undef, pt::variable, pt::constant, pt::host_scalar })
        if (s == property2str(p))
            return p;
    bad(status::invalid_arguments, c, field,
        "unknown property type '" + s
                + "' (undef, variable, constant or host_scalar expected)");
}

bool all_unknown(const dims &d) {
    for (dim x : d)
        if (!is_unknown_dim(x))
            return false;
    return true;
}

logical_tensor parse_lt(const json &v, const ctx &c, const std::string &f) {
    if (!v.is_object())
        bad(status::invalid_arguments, c, f,
            "expected a logical tensor object, got " + type_name(v));
    const size_t id = as_id(member(v, "id", c, f + ".id"), c, f + ".id");
    const std::string fi = f + " (logical tensor " + std::to_string(id) + ")";
    const std::string &dts =
            as_str(member(v, "dtype", c, fi + ".dtype"), c, fi + ".dtype");
    data_type dt;
    if (!str2dtype(dts, dt))
        bad(status::invalid_data_type, c, fi + ".dtype",
            "unknown data type '" + dts + "'");
    const dims shape =
            as_dims(member(v, "shape", c, fi + ".shape"), c, fi + ".shape");
    const dims stride =
            as_dims(member(v, "stride", c, fi + ".stride"), c, fi + ".stride");
    const layout_type lt =
            str2layout(as_str(member(v, "layout_type", c, fi + ".layout_type"),
                              c, fi + ".layout_type"),
                       c, fi + ".layout_type");
    auto pit = v.find("property_type");
    const auto pt =
            pit == v.end()
                    ? logical_tensor::property_type::undef
                    : str2property(as_str(*pit, c, fi + ".property_type"), c,
                                   fi + ".property_type");
    for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] < 0 && !is_unknown_dim(shape[i]))
            bad(status::invalid_shape, c, fi + ".shape",
                "dim " + std::to_string(i) + " of " + dims2str(shape) + " is "
                        + std::to_string(shape[i])
                        + "; a dim is non-negative or unknown");
    // Absurd shapes: the known dims must span at most 2^63 - 1 bytes.
    int64_t bytes = std::max<int64_t>(static_cast<int64_t>(dtype_size(dt)), 1);
    for (dim x : shape)
        if (x >= 0 && !mul_ok(bytes, x, bytes))
            bad(status::invalid_shape, c, fi + ".shape",
                dims2str(shape) + " of " + dtype2str(dt)
                        + " spans more than 2^63 - 1 bytes");
    // oneDNN writes an unknown rank as a shape of one unknown dim.
    if (shape.size() == 1 && shape[0] == logical_tensor::unknown_dim)
        return logical_tensor(id, dt, logical_tensor::unknown_ndims, lt, pt);
    if (lt == layout_type::strided && !all_unknown(stride)) {
        if (stride.size() != shape.size())
            bad(status::invalid_shape, c, fi + ".stride",
                "strides " + dims2str(stride) + " and shape " + dims2str(shape)
                        + " differ in rank");
        for (size_t i = 0; i < stride.size(); ++i)
            if (stride[i] < 0)
                bad(status::invalid_shape, c, fi + ".stride",
                    "stride " + std::to_string(i) + " of " + dims2str(stride)
                            + " is negative");
        return logical_tensor(id, dt, shape, stride, pt);
    }
    // Strides unknown (written as [unknown]) or not strided: oneDNN's own
    // reader ignores them; strided then means dense.
    return logical_tensor(id, dt, shape, lt, pt);
}

attr_value parse_attr(const json &v, const ctx &c, const std::string &f) {
    if (!v.is_object())
        bad(status::invalid_arguments, c, f,
            "expected {\"type\": ..., \"value\": ...}, got " + type_name(v));
    const std::string &type =
            as_str(member(v, "type", c, f + ".type"), c, f + ".type");
    const json &val = member(v, "value", c, f + ".value");
    const std::string fv = f + ".value";
    if (type == "string")
        return as_str(val, c, fv);
    if (type == "bool") {
        if (val.is_boolean())
            return val.get<bool>();
        const int64_t b = as_int(val, c, fv);
        if (b != 0 && b != 1)
            bad(status::invalid_arguments, c, fv,
                "a bool is 0 or 1, got " + std::to_string(b));
        return b != 0;
    }
    if (type == "s64")
        return as_int(val, c, fv);
    if (type == "f32")
        return as_float(val, c, fv);
    if (type == "s64[]") {
        as_array(val, c, fv);
        std::vector<int64_t> r;
        for (size_t i = 0; i < val.size(); ++i)
            r.push_back(as_int(val[i], c, fv + "[" + std::to_string(i) + "]"));
        return r;
    }
    if (type == "f32[]") {
        as_array(val, c, fv);
        std::vector<float> r;
        for (size_t i = 0; i < val.size(); ++i)
            r.push_back(
                    as_float(val[i], c, fv + "[" + std::to_string(i) + "]"));
        return r;
    }
    bad(status::invalid_arguments, c, f + ".type",
        "unknown attribute type '" + type
                + "' (string, bool, s64, s64[], f32 or f32[] expected)");
}

bool str2kind(const std::string &s, op::kind &k) {
    for (int i = 0; i < static_cast<int>(op::kind::LastSymbol); ++i)
        if (s == op_kind2str(static_cast<op::kind>(i))) {
            k = static_cast<op::kind>(i);
            return true;
        }
    return false;
}

bool str2attr(const std::string &s, op::attr &a) {
    for (int i = 1; i <= static_cast<int>(op::attr::weights_format); ++i)
        if (s == attr2str(static_cast<op::attr>(i))) {
            a = static_cast<op::attr>(i);
            return true;
        }
    return false;
}

json_op parse_op(const json &v, size_t index) {
    ctx c { "graph[" + std::to_string(index) + "]" };
    if (!v.is_object())
        bad(status::invalid_arguments, c, "op",
            "expected an object, got " + type_name(v));
    json_op o;
    o.id = as_id(member(v, "id", c, "id"), c, "id");
    const std::string &ks = as_str(member(v, "kind", c, "kind"), c, "kind");
    c.where += " (op " + std::to_string(o.id) + ", " + ks + ")";
    if (!str2kind(ks, o.kind))
        bad(status::invalid_graph_op, c, "kind",
            "unknown op kind '" + ks + "'");
    auto nit = v.find("name");
    if (nit != v.end())
        o.name = as_str(*nit, c, "name");
    auto ait = v.find("attrs");
    if (ait != v.end()) {
        if (!ait->is_object())
            bad(status::invalid_arguments, c, "attrs",
                "expected an object, got " + type_name(*ait));
        for (auto it = ait->begin(); it != ait->end(); ++it)
            o.attrs.emplace_back(
                    it.key(), parse_attr(it.value(), c, "attrs." + it.key()));
    }
    const json &ins = as_array(member(v, "inputs", c, "inputs"), c, "inputs");
    for (size_t i = 0; i < ins.size(); ++i)
        o.inputs.push_back(
                parse_lt(ins[i], c, "inputs[" + std::to_string(i) + "]"));
    const json &outs =
            as_array(member(v, "outputs", c, "outputs"), c, "outputs");
    for (size_t i = 0; i < outs.size(); ++i)
        o.outputs.push_back(
                parse_lt(outs[i], c, "outputs[" + std::to_string(i) + "]"));
    if (o.kind == op::kind::Select)
        for (const auto &a : o.attrs) {
            op::attr k;
            if (!str2attr(a.first, k))
                bad(status::invalid_graph_op, c, "attrs." + a.first,
                    "not an attribute of Select (auto_broadcast, axis)");
        }
    return o;
}

std::vector<size_t> parse_ports(const json &top, const char *key) {
    ctx c;
    std::vector<size_t> r;
    auto it = top.find(key);
    if (it == top.end())
        return r;
    as_array(*it, c, key);
    for (size_t i = 0; i < it->size(); ++i)
        r.push_back(as_id((*it)[i], c,
                          std::string(key) + "[" + std::to_string(i) + "]"));
    return r;
}

std::string op_where(const json_op &o) {
    return "op " + std::to_string(o.id) + " (" + op_kind2str(o.kind) + ")";
}

// Checks ids: op ids unique, a tensor produced once, one description per
// tensor id, ports naming tensors, no cycle.
void check_graph(const json_graph &g) {
    std::set<size_t> op_ids;
    std::map<size_t, size_t> producer; // tensor id -> op index
    std::map<size_t, logical_tensor> seen;
    auto same_desc = [&](const logical_tensor &lt, const json_op &o) {
        auto it = seen.find(lt.get_id());
        if (it == seen.end()) {
            seen.emplace(lt.get_id(), lt);
            return;
        }
        const logical_tensor &a = it->second;
        // The type must agree; shapes may differ in what is known (oneDNN
        // writes a consumer's view and a producer's view of one tensor).
        if (a.get_data_type() != lt.get_data_type())
            fail(status::invalid_graph, "graph JSON: ", op_where(o),
                 ": logical tensor ", lt.get_id(), " is ",
                 dtype2str(lt.get_data_type()), " here but ",
                 dtype2str(a.get_data_type()), " elsewhere");
    };
    for (size_t i = 0; i < g.ops.size(); ++i) {
        const json_op &o = g.ops[i];
        if (!op_ids.insert(o.id).second)
            fail(status::invalid_graph, "graph JSON: graph[", i, "] ",
                 op_where(o), ": op id ", o.id, " is used twice");
        for (const auto &lt : o.outputs) {
            if (!producer.emplace(lt.get_id(), i).second)
                fail(status::invalid_graph, "graph JSON: ", op_where(o),
                     ": logical tensor ", lt.get_id(),
                     " is already the output of op ",
                     g.ops[producer[lt.get_id()]].id);
            same_desc(lt, o);
        }
        for (const auto &lt : o.inputs)
            same_desc(lt, o);
    }
    for (size_t id : g.input_ports)
        if (!seen.count(id))
            fail(status::invalid_graph, "graph JSON: input_ports: logical ",
                 "tensor ", id, " is not a tensor of any op");
        else if (producer.count(id))
            fail(status::invalid_graph, "graph JSON: input_ports: logical ",
                 "tensor ", id, " is the output of op ",
                 g.ops[producer[id]].id);
    for (size_t id : g.output_ports)
        if (!producer.count(id))
            fail(status::invalid_graph, "graph JSON: output_ports: logical ",
                 "tensor ", id, " is not the output of any op");
    // Kahn's algorithm over op -> consuming op edges.
    const size_t n = g.ops.size();
    std::vector<size_t> indeg(n, 0);
    std::vector<std::vector<size_t>> next(n);
    for (size_t i = 0; i < n; ++i)
        for (const auto &lt : g.ops[i].inputs) {
            auto it = producer.find(lt.get_id());
            if (it == producer.end())
                continue;
            next[it->second].push_back(i);
            ++indeg[i];
        }
    std::vector<size_t> ready;
    for (size_t i = 0; i < n; ++i)
        if (!indeg[i])
            ready.push_back(i);
    size_t done = 0;
    while (!ready.empty()) {
        const size_t i = ready.back();
        ready.pop_back();
        ++done;
        for (size_t j : next[i])
            if (--indeg[j] == 0)
                ready.push_back(j);
    }
    if (done != n)
        for (size_t i = 0; i < n; ++i)
            if (indeg[i])
                fail(status::invalid_graph, "graph JSON: ", op_where(g.ops[i]),
                     ": the ops form a cycle (its inputs depend on its own ",
                     "outputs)");
}

nlohmann::ordered_json lt2json(const logical_tensor &lt) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["id"] = lt.get_id();
    j["dtype"] = dtype2str(lt.get_data_type());
    dims shape, stride;
    if (lt.get_ndims() < 0) {
        shape = { logical_tensor::unknown_dim };
        stride = { logical_tensor::unknown_dim };
    } else {
        shape = lt.get_dims();
        if (lt.get_layout_type() == layout_type::strided)
            stride = lt.get_strides();
        else
            stride = { logical_tensor::unknown_dim };
    }
    j["shape"] = shape;
    j["stride"] = stride;
    j["layout_type"] = layout2str(lt.get_layout_type());
    j["property_type"] = property2str(lt.get_property_type());
    return j;
}

nlohmann::ordered_json attr2json(const attr_value &v) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (auto s = std::get_if<std::string>(&v)) {
        j["type"] = "string";
        j["value"] = *s;
    } else if (auto i = std::get_if<int64_t>(&v)) {
        j["type"] = "s64";
        j["value"] = *i;
    } else if (auto f = std::get_if<float>(&v)) {
        j["type"] = "f32";
        j["value"] = *f;
    } else if (auto b = std::get_if<bool>(&v)) {
        j["type"] = "bool";
        j["value"] = *b ? 1 : 0;
    } else if (auto vi = std::get_if<std::vector<int64_t>>(&v)) {
        j["type"] = "s64[]";
        j["value"] = *vi;
    } else if (auto vf = std::get_if<std::vector<float>>(&v)) {
        j["type"] = "f32[]";
        j["value"] = *vf;
    }
    return j;
}

} // namespace

json_graph parse_json_graph(const std::string &text) {
    json top = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (top.is_discarded())
        fail(status::invalid_arguments, "graph JSON: the text is not valid ",
             "JSON");
    const ctx c;
    if (!top.is_object())
        bad(status::invalid_arguments, c, "top level",
            "expected an object, got " + type_name(top));
    json_graph g;
    auto str_field = [&](const char *key, std::string &dst) {
        auto it = top.find(key);
        if (it != top.end())
            dst = as_str(*it, c, key);
    };
    str_field("version", g.version);
    str_field("engine_kind", g.engine_kind);
    str_field("fpmath_mode", g.fpmath_mode);
    if (g.engine_kind != "cpu" && g.engine_kind != "gpu")
        bad(status::invalid_arguments, c, "engine_kind",
            "'" + g.engine_kind + "' is neither cpu nor gpu");
    g.input_ports = parse_ports(top, "input_ports");
    g.output_ports = parse_ports(top, "output_ports");
    const json &ops = as_array(member(top, "graph", c, "graph"), c, "graph");
    for (size_t i = 0; i < ops.size(); ++i)
        g.ops.push_back(parse_op(ops[i], i));
    check_graph(g);
    return g;
}

std::string write_json_graph(const json_graph &g) {
    // ordered_json keeps the field order oneDNN writes.
    nlohmann::ordered_json top;
    top["version"] = g.version;
    top["engine_kind"] = g.engine_kind;
    top["fpmath_mode"] = g.fpmath_mode;
    top["input_ports"] = g.input_ports;
    top["output_ports"] = g.output_ports;
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const auto &o : g.ops) {
        nlohmann::ordered_json jo;
        jo["id"] = o.id;
        jo["name"] = o.name;
        jo["kind"] = op_kind2str(o.kind);
        nlohmann::ordered_json attrs = nlohmann::ordered_json::object();
        for (const auto &a : o.attrs)
            attrs[a.first] = attr2json(a.second);
        jo["attrs"] = attrs;
        nlohmann::ordered_json ins = nlohmann::ordered_json::array();
        for (const auto &lt : o.inputs)
            ins.push_back(lt2json(lt));
        nlohmann::ordered_json outs = nlohmann::ordered_json::array();
        for (const auto &lt : o.outputs)
            outs.push_back(lt2json(lt));
        jo["inputs"] = ins;
        jo["outputs"] = outs;
        ops.push_back(jo);
    }
    top["graph"] = ops;
    return top.dump(2) + "\n";
}

op make_op(const json_op &o) {
    op r(o.id, o.kind, o.inputs, o.outputs, o.name);
    for (const auto &a : o.attrs) {
        op::attr k;
        if (!str2attr(a.first, k))
            continue; // an attribute selgraph's op::attr does not name
        std::visit([&](const auto &v) { r.set_attr(k, v); }, a.second);
    }
    return r;
}

json_op to_json_op(const op::impl &o) {
    json_op r;
    r.id = o.id;
    r.name = o.name;
    r.kind = o.kind;
    r.inputs = o.inputs;
    r.outputs = o.outputs;
    for (const auto &a : o.attrs)
        r.attrs.emplace_back(attr2str(a.first), a.second);
    return r;
}

void infer_ports(json_graph &g) {
    std::set<size_t> produced, consumed, listed_in, listed_out;
    for (const auto &o : g.ops) {
        for (const auto &lt : o.outputs)
            produced.insert(lt.get_id());
        for (const auto &lt : o.inputs)
            consumed.insert(lt.get_id());
    }
    g.input_ports.clear();
    g.output_ports.clear();
    for (const auto &o : g.ops) {
        for (const auto &lt : o.inputs)
            if (!produced.count(lt.get_id())
                && listed_in.insert(lt.get_id()).second)
                g.input_ports.push_back(lt.get_id());
        for (const auto &lt : o.outputs)
            if (!consumed.count(lt.get_id())
                && listed_out.insert(lt.get_id()).second)
                g.output_ports.push_back(lt.get_id());
    }
}

void dump_json_graph(const json_graph &g, const std::string &file) {
    std::ofstream f(file);
    f << write_json_graph(g);
    if (!f)
        std::fprintf(stderr, "selgraph: cannot write graph dump %s\n",
                     file.c_str());
}

bool graph_dump_enabled(const char *what) {
    const char *env = std::getenv("SELGRAPH_GRAPH_DUMP");
    if (!env)
        return false;
    for (const std::string &item : comma_items(env))
        if (item == what)
            return true;
    return false;
}

} // namespace impl
} // namespace selgraph
