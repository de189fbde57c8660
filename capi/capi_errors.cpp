// The C API's shared machinery: the thread's last error, status names, the version, the handle
// registry, cancel flags and the argument checks.
#include "capi/capi_internal.hpp"

#include "host/text/utf8.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace vkf::capi {
namespace {

thread_local std::string last_error;

// A live handle: its kind, the thread of the call it is in (a default id: none), and how many
// generations use it as a tokenizer or cancel flag (Pin).
struct Entry {
    Kind kind;
    std::thread::id user;
    std::uint32_t pins = 0;
};

std::mutex registry_mutex;
std::unordered_map<const void*, Entry>& registry() {
    static auto* live = new std::unordered_map<const void*, Entry>();  // never destroyed: usable at exit
    return *live;
}

// The live entry of `handle` as `kind`; throws ApiError(VKF_ERROR_INVALID_HANDLE) otherwise.
// Called with registry_mutex held.
Entry& entry_of(const void* handle, Kind kind, const char* type) {
    if (handle == nullptr) {
        throw ApiError(VKF_ERROR_INVALID_HANDLE, fmt::format("{} handle is NULL", type));
    }
    const auto it = registry().find(handle);
    if (it == registry().end() || it->second.kind != kind) {
        throw ApiError(VKF_ERROR_INVALID_HANDLE,
                       fmt::format("{0} handle is not a live {0} (freed already, or another kind of handle)", type));
    }
    return it->second;
}

[[noreturn]] void refuse_busy(const Entry& entry, const char* type, const char* what) {
    if (entry.user == std::this_thread::get_id()) {
        throw ApiError(VKF_ERROR_BUSY, fmt::format("the {} is in a call on this thread already: {} from its own "
                                                   "callback is refused (the call under way goes on unchanged)",
                                                   type, what));
    }
    throw ApiError(VKF_ERROR_BUSY, fmt::format("the {} is in a call on another thread: {} is refused (a {} is "
                                               "used by one thread at a time)",
                                               type, what, type));
}

}  // namespace

const char* last_error_text() {
    return last_error.c_str();
}

void set_last_error(const std::string& message) {
    last_error = message;
}

vkf_status fail(vkf_status status, const char* function, const char* message) noexcept {
    try {
        last_error = std::string(function) + ": " + message;
    } catch (...) {
        last_error.clear();  // out of memory for the message itself: the status still says it
    }
    return status;
}

void register_handle(const void* handle, Kind kind) {
    const std::lock_guard lock(registry_mutex);
    registry()[handle] = Entry{kind, {}, 0};
}

void check_handle(const void* handle, Kind kind, const char* type) {
    const std::lock_guard lock(registry_mutex);
    entry_of(handle, kind, type);
}

void unregister_handle(const void* handle, Kind kind, const char* type) {
    const std::lock_guard lock(registry_mutex);
    const Entry& entry = entry_of(handle, kind, type);
    if (entry.user != std::thread::id()) {
        refuse_busy(entry, type, "freeing it");
    }
    if (entry.pins != 0) {
        throw ApiError(VKF_ERROR_BUSY, fmt::format("the {} is in use by a generation (its params.tokenizer or "
                                                   "params.cancel): free it after the generation ends",
                                                   type));
    }
    registry().erase(handle);
}

void check_not_elsewhere(const void* handle, Kind kind, const char* type) {
    const std::lock_guard lock(registry_mutex);
    const Entry& entry = entry_of(handle, kind, type);
    if (entry.user != std::thread::id() && entry.user != std::this_thread::get_id()) {
        refuse_busy(entry, type, "this call");
    }
}

InUse::InUse(const void* handle, Kind kind, const char* type) : handle_(handle) {
    const std::lock_guard lock(registry_mutex);
    Entry& entry = entry_of(handle, kind, type);
    if (entry.user != std::thread::id()) {
        refuse_busy(entry, type, "another call");
    }
    entry.user = std::this_thread::get_id();
}

Pin::Pin(const void* handle, Kind kind, const char* type) : handle_(handle) {
    if (handle != nullptr) {
        const std::lock_guard lock(registry_mutex);
        entry_of(handle, kind, type).pins += 1;
    }
}

Pin::~Pin() {
    if (handle_ != nullptr) {
        const std::lock_guard lock(registry_mutex);
        const auto it = registry().find(handle_);
        if (it != registry().end()) {
            it->second.pins -= 1;
        }
    }
}

InUse::~InUse() {
    const std::lock_guard lock(registry_mutex);
    // Still registered: a free meanwhile was refused.
    const auto it = registry().find(handle_);
    if (it != registry().end()) {
        it->second.user = std::thread::id();
    }
}

void require(bool condition, const std::string& message) {
    if (!condition) {
        throw ApiError(VKF_ERROR_INVALID_ARGUMENT, message);
    }
}

vkf::QuantFormat kv_quant_of(std::uint32_t format, const char* name) {
    require(format <= VKF_KV_Q4_0,
            fmt::format("{} is {}; VKF_KV_DENSE (0), VKF_KV_Q8_0 (1) or VKF_KV_Q4_0 (2)", name, format));
    return format == VKF_KV_Q8_0   ? vkf::QuantFormat::Q8_0
           : format == VKF_KV_Q4_0 ? vkf::QuantFormat::Q4_0
                                   : vkf::QuantFormat::None;
}

std::filesystem::path existing_path(const char* path, const char* name) {
    require(path != nullptr, std::string(name) + " is NULL");
    require(*path != '\0', std::string(name) + " is empty");
    std::error_code ec;
    const std::filesystem::path p(path);
    if (!std::filesystem::exists(p, ec)) {
        throw ApiError(VKF_ERROR_IO, std::string(name) + " '" + path + "' does not exist");
    }
    return p;
}

void check_utf8(std::string_view text, const char* name) {
    const std::size_t bad = text::find_invalid_utf8(text);
    if (bad != std::string_view::npos && bad < text.size()) {
        throw ApiError(VKF_ERROR_INVALID_UTF8, std::string(name) + " is not UTF-8 (byte " + fmt::to_string(bad) + ")");
    }
}

void copy_string(char* dst, std::size_t capacity, std::string_view src) {
    const std::size_t n = std::min(src.size(), capacity - 1);
    std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

WeightFormat weight_format(std::uint32_t format) {
    switch (format) {
        case VKF_WEIGHTS_F32:
            return {DType::F32, QuantFormat::None};
        case VKF_WEIGHTS_F16:
            return {DType::F16, QuantFormat::None};
        case VKF_WEIGHTS_Q8_0:
            return {DType::F16, QuantFormat::Q8_0};
        case VKF_WEIGHTS_Q4_0:
            return {DType::F16, QuantFormat::Q4_0};
        default:
            throw ApiError(VKF_ERROR_INVALID_ARGUMENT,
                           "weights is " + fmt::to_string(format) + ", not a vkf_weight_format");
    }
}

std::uint32_t weight_format_code(WeightFormat format) {
    if (format.quant == QuantFormat::Q8_0)
        return VKF_WEIGHTS_Q8_0;
    if (format.quant == QuantFormat::Q4_0)
        return VKF_WEIGHTS_Q4_0;
    return format.dense == DType::F16 ? VKF_WEIGHTS_F16 : VKF_WEIGHTS_F32;
}

}  // namespace vkf::capi

using namespace vkf::capi;

extern "C" {

VKF_API uint32_t vkf_version(void) {
    return VKF_VERSION_MAJOR * 10000u + VKF_VERSION_MINOR * 100u + VKF_VERSION_PATCH;
}

VKF_API uint32_t vkf_abi_version(void) {
    return VKF_ABI_VERSION;
}

VKF_API const char* vkf_version_string(void) {
    static const std::string text =
        std::string(vkf::build::kVersion) + " (git " + std::string(vkf::build::kGitCommit) + ")";
    return text.c_str();
}

VKF_API const char* vkf_status_name(vkf_status status) {
    switch (status) {
        case VKF_OK:
            return "VKF_OK";
        case VKF_ERROR_INVALID_ARGUMENT:
            return "VKF_ERROR_INVALID_ARGUMENT";
        case VKF_ERROR_INVALID_HANDLE:
            return "VKF_ERROR_INVALID_HANDLE";
        case VKF_ERROR_INVALID_UTF8:
            return "VKF_ERROR_INVALID_UTF8";
        case VKF_ERROR_IO:
            return "VKF_ERROR_IO";
        case VKF_ERROR_MODEL:
            return "VKF_ERROR_MODEL";
        case VKF_ERROR_OUT_OF_MEMORY:
            return "VKF_ERROR_OUT_OF_MEMORY";
        case VKF_ERROR_DEVICE_LOST:
            return "VKF_ERROR_DEVICE_LOST";
        case VKF_ERROR_CANCELLED:
            return "VKF_ERROR_CANCELLED";
        case VKF_ERROR_BUFFER_TOO_SMALL:
            return "VKF_ERROR_BUFFER_TOO_SMALL";
        case VKF_ERROR_UNSUPPORTED:
            return "VKF_ERROR_UNSUPPORTED";
        case VKF_ERROR_INTERNAL:
            return "VKF_ERROR_INTERNAL";
        case VKF_ERROR_BUSY:
            return "VKF_ERROR_BUSY";
    }
    return "VKF_UNKNOWN_STATUS";
}

VKF_API const char* vkf_last_error(void) {
    return last_error_text();
}

VKF_API vkf_status vkf_cancel_create(vkf_cancel** out) {
    return guarded(__func__, [&] {
        out_ptr(out, "out");
        auto cancel = std::make_unique<vkf_cancel>();
        register_handle(cancel.get(), Kind::Cancel);
        *out = cancel.release();
    });
}

VKF_API vkf_status vkf_cancel_request(vkf_cancel* cancel) {
    return guarded(__func__, [&] { live(cancel, Kind::Cancel, "vkf_cancel").requested.store(true); });
}

VKF_API vkf_status vkf_cancel_reset(vkf_cancel* cancel) {
    return guarded(__func__, [&] { live(cancel, Kind::Cancel, "vkf_cancel").requested.store(false); });
}

VKF_API vkf_status vkf_cancel_is_requested(const vkf_cancel* cancel, int* requested) {
    return guarded(__func__, [&] {
        const bool value = live(cancel, Kind::Cancel, "vkf_cancel").requested.load();
        *out_ptr(requested, "requested") = value ? 1 : 0;
    });
}

VKF_API vkf_status vkf_cancel_free(vkf_cancel* cancel) {
    if (cancel == nullptr) {
        return guarded(__func__, [] {});
    }
    return guarded(__func__, [&] {
        unregister_handle(cancel, Kind::Cancel, "vkf_cancel");
        delete cancel;
    });
}

}  // extern "C"
