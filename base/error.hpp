#pragma once
// vkformer reports every failure as a vkf::Error exception whose message names what went
// wrong (the Vulkan call and its VkResult, the tensor and its shape, the file and its
// offset). One error model everywhere: callers catch vkf::Error.

#include <stdexcept>
#include <string>

namespace vkf {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Thrown when GPU work does not finish in time or the device is lost: the context is
// unusable afterwards and callers usually want to stop rather than retry.
class DeviceLostError : public Error {
public:
    using Error::Error;
};

// Thrown when device memory runs out (the driver's VK_ERROR_OUT_OF_DEVICE_MEMORY or
// VK_ERROR_OUT_OF_HOST_MEMORY, or a forced memory size); the message names the buffer and its
// size. Everything allocated before is released as the exception unwinds, and the context
// stays usable: smaller work may still fit.
class OutOfMemoryError : public Error {
public:
    using Error::Error;
};

}  // namespace vkf
