// The C API's sequence state (include/vkformer/vkformer_state.h): a session's sequence saved
// to memory or a file and loaded into a session of the same model (host/model/sequence_state.hpp).
#include "capi/capi_internal.hpp"

#include "base/files.hpp"
#include "host/model/sequence_state.hpp"

#include <fmt/format.h>

#include <algorithm>

using namespace vkf::capi;

namespace {

std::vector<std::byte> saved(vkf_session& s) {
    return vkf::serialize_state(s.session->save_state(s.model->tokenizer_crc));
}

// Parses first: a refusal leaves the session as it was.
void load(vkf_session& s, std::span<const std::byte> bytes, std::string_view what) {
    const vkf::StateFingerprint expected = s.session->state_fingerprint(s.model->tokenizer_crc);
    s.session->load_state(vkf::parse_state(bytes, expected, what));
}

}  // namespace

extern "C" {

VKF_API vkf_status vkf_session_state_size(const vkf_session* session, size_t* size) {
    return guarded(__func__, [&] {
        check_not_elsewhere(session, Kind::Session, "vkf_session");
        *out_ptr(size, "size") = session->session->state_size();
    });
}

VKF_API vkf_status vkf_session_save_state(vkf_session* session, void* buffer, size_t capacity, size_t* size) {
    return guarded(__func__, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        out_ptr(size, "size");
        require(buffer != nullptr || capacity == 0, "buffer is NULL with a capacity");
        const std::uint64_t needed = session->session->state_size();
        *size = needed;
        if (capacity < needed) {
            throw ApiError(VKF_ERROR_BUFFER_TOO_SMALL,
                           fmt::format("the state is {} bytes, capacity is {}", needed, capacity));
        }
        const std::vector<std::byte> bytes = saved(*session);
        std::copy(bytes.begin(), bytes.end(), static_cast<std::byte*>(buffer));
        *size = bytes.size();
    });
}

VKF_API vkf_status vkf_session_load_state(vkf_session* session, const void* buffer, size_t size) {
    return guarded(__func__, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        require(buffer != nullptr || size == 0, "buffer is NULL with a size");
        load(*session, std::span(static_cast<const std::byte*>(buffer), size), "state");
    });
}

VKF_API vkf_status vkf_session_save_state_file(vkf_session* session, const char* path) {
    return guarded(__func__, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        require(path != nullptr, "path is NULL");
        const std::vector<std::byte> bytes = saved(*session);
        vkf::write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                   "state file");
    });
}

VKF_API vkf_status vkf_session_load_state_file(vkf_session* session, const char* path) {
    return guarded(__func__, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        const std::filesystem::path file = existing_path(path, "path");
        // No state of this session is larger: a bigger file is refused before it is read.
        const vkf::Session& s = *session->session;
        const std::uint64_t limit = vkf::serialized_state_size(s.state_fingerprint(0), s.max_tokens(), s.max_tokens());
        std::string bytes;
        try {
            bytes = vkf::read_file(file, limit, "state file");
        } catch (const vkf::Error& e) {
            throw ApiError(VKF_ERROR_IO, e.what());
        }
        load(*session, std::as_bytes(std::span(bytes)), fmt::format("state file '{}'", file.string()));
    });
}

}  // extern "C"
