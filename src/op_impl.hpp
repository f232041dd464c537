// The state behind selgraph::op: kind, ports and attributes as given.
#ifndef SELGRAPH_SRC_OP_IMPL_HPP
#define SELGRAPH_SRC_OP_IMPL_HPP

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "common.hpp"

namespace selgraph {

using attr_value = std::variant<std::string, int64_t, float, bool,
                                std::vector<int64_t>, std::vector<float>>;

struct op::impl {
    size_t id = 0;
    op::kind kind = op::kind::Wildcard;
    std::string name;
    std::vector<logical_tensor> inputs;
    std::vector<logical_tensor> outputs;
    std::map<op::attr, attr_value> attrs;
};

namespace impl {
const char *attr2str(op::attr a);
} // namespace impl

} // namespace selgraph

#endif
