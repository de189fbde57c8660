#pragma once
// What the C API's entry points share: the handle structs, the registry of live handles (which
// turns a freed or foreign handle into VKF_ERROR_INVALID_HANDLE instead of a crash where the
// address has not been reused), and guarded(), which runs an entry point's body and maps every
// exception to a vkf_status and the thread's last-error message. Nothing escapes an entry point.

#include "vkformer/vkformer.h"

#include "base/error.hpp"
#include "host/model/batch.hpp"
#include "host/model/batch_generation.hpp"
#include "host/model/encoder.hpp"
#include "host/model/model.hpp"
#include "host/model/session.hpp"
#include "host/text/token_text_sink.hpp"
#include "host/text/tokenizer.hpp"
#include "runtime/context.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkf::capi {

// An error the C layer itself finds (a NULL pointer, a bad handle, a missing file), with the
// status it maps to.
class ApiError : public std::runtime_error {
public:
    ApiError(vkf_status code, const std::string& message) : std::runtime_error(message), status(code) {}
    vkf_status status;
};

// Thrown out of a progress callback that asked to stop, and caught by guarded().
struct Cancelled {};

enum class Kind { Cancel, Context, Model, Session, Batch, Tokenizer, Encoder };

// The registry of live handles.
void register_handle(const void* handle, Kind kind);
// Throws ApiError(VKF_ERROR_INVALID_HANDLE) for NULL or a handle not live as `kind`.
void check_handle(const void* handle, Kind kind, const char* type);
// The same, then forgets it (a second free is then refused); ApiError(VKF_ERROR_BUSY) while
// it is in a call (InUse), which would go on with it freed.
void unregister_handle(const void* handle, Kind kind, const char* type);
// check_handle, and ApiError(VKF_ERROR_BUSY) while another thread has it in a call: a read
// such as vkf_session_position is allowed from the call's own callback, not concurrently.
void check_not_elsewhere(const void* handle, Kind kind, const char* type);

// Marks a session, batch or encoder as in a call while it lives. Another call on it
// meanwhile, from the call's own token callback or from another thread, is refused with
// VKF_ERROR_BUSY before it touches anything, so the call under way goes on as if it had not
// been made (a second vkf_generate from the callback would otherwise interleave its tokens
// with the first's, a free would leave it running on freed memory). Checked and claimed under
// the registry's lock: a free on another thread cannot slip in between.
class InUse {
public:
    InUse(const void* handle, Kind kind, const char* type);
    ~InUse();
    InUse(const InUse&) = delete;
    InUse& operator=(const InUse&) = delete;

private:
    const void* handle_;
};

// Holds a tokenizer or cancel flag a generation uses while it lives: freeing it meanwhile is
// refused (VKF_ERROR_BUSY) instead of leaving the generation reading freed memory. Shared: any
// number of generations, on any threads, may pin one. A NULL handle pins nothing; a handle not
// live as `kind` is refused (VKF_ERROR_INVALID_HANDLE).
class Pin {
public:
    Pin(const void* handle, Kind kind, const char* type);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;

private:
    const void* handle_;
};

template <class T>
T& live(T* handle, Kind kind, const char* type) {
    check_handle(handle, kind, type);
    return *handle;
}
template <class T>
const T& live(const T* handle, Kind kind, const char* type) {
    check_handle(handle, kind, type);
    return *handle;
}

void set_last_error(const std::string& message);
const char* last_error_text();
vkf_status fail(vkf_status status, const char* function, const char* message) noexcept;

// Runs `body` (void()), returning VKF_OK, or the status of what it threw with the message in
// vkf_last_error() ("vkf_model_load: ...").
template <class F>
vkf_status guarded(const char* function, F&& body) noexcept {
    try {
        set_last_error("");
        body();
        set_last_error("");  // a call refused in a callback during body() left its message
        return VKF_OK;
    } catch (const ApiError& e) {
        return fail(e.status, function, e.what());
    } catch (const Cancelled&) {
        return fail(VKF_ERROR_CANCELLED, function, "cancelled");
    } catch (const vkf::OutOfMemoryError& e) {
        return fail(VKF_ERROR_OUT_OF_MEMORY, function, e.what());
    } catch (const vkf::DeviceLostError& e) {
        return fail(VKF_ERROR_DEVICE_LOST, function, e.what());
    } catch (const vkf::Error& e) {
        return fail(VKF_ERROR_MODEL, function, e.what());
    } catch (const std::bad_alloc&) {
        return fail(VKF_ERROR_OUT_OF_MEMORY, function, "out of host memory");
    } catch (const std::filesystem::filesystem_error& e) {
        return fail(VKF_ERROR_IO, function, e.what());
    } catch (const std::exception& e) {
        return fail(VKF_ERROR_INTERNAL, function, e.what());
    } catch (...) {
        return fail(VKF_ERROR_INTERNAL, function, "unknown exception");
    }
}

// Argument checks that throw ApiError(VKF_ERROR_INVALID_ARGUMENT).
void require(bool condition, const std::string& message);
// A vkf_kv_format field (`name`, e.g. "params.kv_k") as the cache's QuantFormat (None for
// VKF_KV_DENSE); any other value is refused.
vkf::QuantFormat kv_quant_of(std::uint32_t format, const char* name);
// The KV-cache fields of a params struct on options with kv_dtype, kv_k_quant, kv_v_quant.
template <class Params, class Options>
void apply_kv_params(const Params& p, Options& options) {
    options.kv_dtype = p.kv_f32 ? vkf::DType::F32 : vkf::DType::F16;
    options.kv_k_quant = kv_quant_of(p.kv_k, "params.kv_k");
    options.kv_v_quant = kv_quant_of(p.kv_v, "params.kv_v");
    require(p.kv_f32 == 0 || (p.kv_k == VKF_KV_DENSE && p.kv_v == VKF_KV_DENSE),
            "params.kv_f32 with a quantized params.kv_k or kv_v: a quantized cache keeps its other side in fp16");
}
template <class T>
T* out_ptr(T* p, const char* name) {
    require(p != nullptr, std::string(name) + " is NULL");
    return p;
}
// A params struct from the caller: NULL gives `defaults`; a struct_size below the first
// version's (`v1_size`) or over 64 KiB is refused; fields past struct_size keep the defaults.
template <class P>
P read_params(const P* given, P defaults, std::size_t v1_size, const char* name) {
    if (given == nullptr) {
        return defaults;
    }
    require(given->struct_size >= v1_size && given->struct_size <= (64u << 10),
            std::string(name) + ".struct_size is " + fmt::to_string(given->struct_size) +
                " (set it with the vkf_*_default_params() of the header)");
    std::memcpy(&defaults, given, std::min(given->struct_size, sizeof(P)));
    defaults.struct_size = sizeof(P);
    return defaults;
}
// An output struct: its struct_size bytes are written (at least the first version's).
template <class P>
void write_out(P* out, const P& value, std::size_t v1_size, const char* name) {
    out_ptr(out, name);
    require(out->struct_size >= v1_size && out->struct_size <= (64u << 10),
            std::string(name) + "->struct_size is " + fmt::to_string(out->struct_size) + " (set it to sizeof)");
    const std::size_t size = std::min(out->struct_size, sizeof(P));
    P copy = value;
    copy.struct_size = out->struct_size;
    std::memcpy(out, &copy, size);
}
// A NUL-terminated string argument that names a file or directory which must exist.
std::filesystem::path existing_path(const char* path, const char* name);
// Refuses (VKF_ERROR_INVALID_UTF8, with the byte offset) text that is not UTF-8.
void check_utf8(std::string_view text, const char* name);
void copy_string(char* dst, std::size_t capacity, std::string_view src);
WeightFormat weight_format(std::uint32_t format);
std::uint32_t weight_format_code(WeightFormat format);

struct ContextState {
    std::unique_ptr<Context> context;
};
struct ModelState {
    std::shared_ptr<ContextState> context;  // declared first: destroyed after the model
    std::unique_ptr<Model> model;
    // CRC-32 of the model directory's tokenizer.json (0 without one): in saved states'
    // fingerprints (capi_state.cpp).
    std::uint32_t tokenizer_crc = 0;
};

}  // namespace vkf::capi

struct vkf_cancel {
    std::atomic<bool> requested{false};
};
struct vkf_context {
    std::shared_ptr<vkf::capi::ContextState> state;
};
struct vkf_model {
    std::shared_ptr<vkf::capi::ModelState> state;
};
struct vkf_session {
    std::shared_ptr<vkf::capi::ModelState> model;
    std::unique_ptr<vkf::Session> session;
};
struct vkf_tokenizer {
    std::unique_ptr<vkf::text::Tokenizer> tokenizer;
};
struct vkf_encoder {
    std::shared_ptr<vkf::capi::ContextState> context;
    std::unique_ptr<vkf::Encoder> encoder;
};

// The size of a struct's first version: up to and including its last field at ABI 1. Fields
// appended later do not move it, so older callers' structs stay accepted.
#define VKF_V1_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(((type*)nullptr)->last_field))

namespace vkf::capi {

// A session's or batch's KV-cache size from the caller: refused when 0 or over the limit
// (ApiError(VKF_ERROR_INVALID_ARGUMENT) naming `name`, the value and the limit).
void check_cache_tokens(std::uint32_t max_tokens, const char* name);

// A generation's parameters, read from the caller's struct (checked: the sampling settings,
// the stop ids against the model's vocabulary, the tokenizer and cancel handles).
struct GenerateSettings {
    vkf_generate_params params;
    GenerationOptions options;  // on_token not set
};
GenerateSettings generate_settings(const vkf_generate_params* given, const ModelConfig& config);

// The caller's token callback fed by the token-to-text sink every generation shares
// (host/text/token_text_sink.hpp: whole UTF-8 characters, the cancel flag). Pins the tokenizer
// and the cancel flag of the params while it lives.
class TokenSink {
public:
    explicit TokenSink(const vkf_generate_params& params);
    // After each token: false ends the generation.
    bool push(std::uint32_t id);
    // The bytes held back, as one more call with VKF_TOKEN_NONE.
    void finish();
    // How the C API names a generation's StopReason.
    vkf_stop_reason stop_reason(StopReason stop) const;

private:
    Pin tokenizer_pin_;  // first: held before text_ reads the tokenizer
    Pin cancel_pin_;
    vkf_token_fn on_token_;
    void* user_data_;
    bool has_text_;  // a tokenizer: the callback gets text, not NULL
    text::TokenTextSink text_;
};

}  // namespace vkf::capi
