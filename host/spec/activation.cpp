#include "host/spec/activation.hpp"

namespace vkf {

const char* to_string(Activation a) {
    switch (a) {
        case Activation::GeluTanh:
            return "gelu_tanh";
        case Activation::GeluErf:
            return "gelu_erf";
        case Activation::Silu:
            return "silu";
        default:
            return "none";
    }
}

}  // namespace vkf
