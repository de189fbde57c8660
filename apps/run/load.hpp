#pragma once
// vkf-run's model: loaded with a progress line, refused before any upload when it and the
// KV cache it is sized for do not fit the device (ModelOptions::session).

#include "apps/run/options.hpp"
#include "host/model/memory_estimate.hpp"
#include "host/model/model.hpp"

#include <cstdint>
#include <memory>

namespace vkf::run_cli {

struct LoadedModel {
    std::unique_ptr<Model> model;
    double seconds = 0.0;  // wall time of reading and uploading
};

LoadedModel load_model(Context& ctx, const Options& o, const SessionSize& session);

// The model's shape, formats and memory on stderr (unless --quiet), and the device's memory
// note where buffers fell back to host-visible memory.
void print_model_line(const Context& ctx, const Model& model, const Options& o, std::uint64_t kv_device_bytes,
                      const char* holder);

}  // namespace vkf::run_cli
