#include "host/spec/pooling.hpp"

namespace vkf {

std::string_view pooling_name(Pooling pooling) {
    switch (pooling) {
        case Pooling::None:
            return "none";
        case Pooling::Mean:
            return "mean";
        case Pooling::Cls:
            return "cls";
    }
    return "unknown";
}

std::optional<Pooling> parse_pooling(std::string_view text) {
    for (const Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls}) {
        if (pooling_name(p) == text) {
            return p;
        }
    }
    return std::nullopt;
}

}  // namespace vkf
