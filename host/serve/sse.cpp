#include "host/serve/sse.hpp"

namespace vkf::serve {

std::string sse_event(const nlohmann::ordered_json& data) {
    return "data: " + data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n\n";
}

}  // namespace vkf::serve
