#include "common.hpp"

#include <limits>

namespace selgraph {

error::error(selgraph::status astatus, std::string message)
    : status(astatus)
    , message_(std::move(message)) {}

const char *status2str(status s) noexcept {
    switch (s) {
        case status::success: return "success";
        case status::out_of_memory: return "out_of_memory";
        case status::invalid_arguments: return "invalid_arguments";
        case status::unimplemented: return "unimplemented";
        case status::last_impl_reached: return "last_impl_reached";
        case status::runtime_error: return "runtime_error";
        case status::not_required: return "not_required";
        case status::invalid_graph: return "invalid_graph";
        case status::invalid_graph_op: return "invalid_graph_op";
        case status::invalid_shape: return "invalid_shape";
        case status::invalid_data_type: return "invalid_data_type";
    }
    return "unknown";
}

namespace impl {

const char *dtype2str(data_type dt) {
    switch (dt) {
        case data_type::undef: return "undef";
        case data_type::f16: return "f16";
        case data_type::bf16: return "bf16";
        case data_type::f32: return "f32";
        case data_type::s32: return "s32";
        case data_type::s8: return "s8";
        case data_type::u8: return "u8";
        case data_type::boolean: return "boolean";
        case data_type::f8_e5m2: return "f8_e5m2";
        case data_type::f8_e4m3: return "f8_e4m3";
        case data_type::s4: return "s4";
        case data_type::u4: return "u4";
        case data_type::f64: return "f64";
        case data_type::s64: return "s64";
        case data_type::u16: return "u16";
        case data_type::s16: return "s16";
        case data_type::u32: return "u32";
        case data_type::u64: return "u64";
    }
    return "unknown";
}

bool str2dtype(const std::string &name, data_type &dt) {
    // Every value dtype2str names; a new type is one line there and one
    // here.
    static const data_type all[] = {
        data_type::undef,   data_type::f16,     data_type::bf16,
        data_type::f32,     data_type::s32,     data_type::s8,
        data_type::u8,      data_type::f64,     data_type::boolean,
        data_type::f8_e5m2, data_type::f8_e4m3, data_type::s4,
        data_type::u4,      data_type::s64,     data_type::u16,
        data_type::s16,     data_type::u32,     data_type::u64,
    };
    for (data_type d : all)
        if (name == dtype2str(d)) {
            dt = d;
            return true;
        }
    return false;
}

const char *layout2str(layout_type lt) {
    switch (lt) {
        case layout_type::undef: return "undef";
        case layout_type::any: return "any";
        case layout_type::strided: return "strided";
        case layout_type::opaque: return "opaque";
    }
    return "unknown";
}

std::string dims2str(const dim *d, int n) {
    if (n < 0)
        return "[?]";
    std::string s = "[";
    for (int i = 0; i < n; ++i) {
        if (i)
            s += ",";
        s += is_unknown_dim(d[i]) ? std::string("?") : std::to_string(d[i]);
    }
    return s + "]";
}

std::string dims2str(const dims &d) {
    return dims2str(d.data(), static_cast<int>(d.size()));
}

size_t dtype_size(data_type dt) {
    switch (dt) {
        case data_type::f64:
        case data_type::s64:
        case data_type::u64: return 8;
        case data_type::f32:
        case data_type::s32:
        case data_type::u32: return 4;
        case data_type::f16:
        case data_type::bf16:
        case data_type::s16:
        case data_type::u16: return 2;
        case data_type::s8:
        case data_type::u8:
        case data_type::boolean:
        case data_type::f8_e5m2:
        case data_type::f8_e4m3: return 1;
        default: return 0;
    }
}

bool mul_ok(int64_t a, int64_t b, int64_t &r) {
    return !__builtin_mul_overflow(a, b, &r);
}

bool add_ok(int64_t a, int64_t b, int64_t &r) {
    return !__builtin_add_overflow(a, b, &r);
}

std::vector<std::string> comma_items(const std::string &s) {
    std::vector<std::string> items;
    if (s.empty())
        return items;
    for (size_t at = 0;;) {
        const size_t end = s.find(',', at);
        items.push_back(s.substr(at, end - at));
        if (end == std::string::npos)
            return items;
        at = end + 1;
    }
}

} // namespace impl
} // namespace selgraph
