// vkf-attention: runs one ALiBi attention call on .npy tensors, with the tiled GPU op (or
// the naive baseline), writes the output as .npy and optionally checks it against the
// double-precision CPU reference. For trying shapes and devices, and for comparing with
// other implementations from Python.

#include "apps/common/cli.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/reference/attention.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "host/io/npy.hpp"
#include "host/util/format.hpp"
#include "runtime/context.hpp"
#include "runtime/error.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using vkf::cli::kExitFailure;
using vkf::cli::kExitUsage;

constexpr const char* kUsage = R"(usage: vkf-attention --q Q.npy --k K.npy --v V.npy [--out O.npy] [options]

Runs softmax(scale * Q.K^T + ALiBi bias, masked) . V on the GPU. Q is [batch, q_len,
n_head, head_dim], K and V are [batch, kv_len, n_kv_head, head_dim] (float32 or
float16, all three alike); n_head must be a multiple of n_kv_head. When q_len < kv_len,
query row i sits at position kv_len - q_len + i (a KV cache). The output has Q's shape.

options:
  --q, --k, --v FILE   the input tensors (.npy)
  --out FILE           write the output here (.npy, in the GPU storage dtype)
  --mask causal|none   causal hides keys after the query's position (default causal)
  --alibi causal|symmetric
                       ALiBi bias slope*(j-i) (decoders) or -slope*|i-j| (encoders);
                       default causal
  --no-alibi           no position bias
  --max-bias B         maximum ALiBi bias for the slope formula (default 8)
  --slopes FILE        explicit per-head slopes, float32 [n_head] (.npy)
  --scale X            softmax scale (default 1/sqrt(head_dim))
  --kv-lens FILE       valid keys per batch entry, int32 or uint32 [batch] (.npy)
  --dtype f32|f16      storage type on the GPU (default: the inputs' dtype)
  --naive              run the naive three-pass baseline instead of the tiled op
  --check              also run the CPU reference; print max relative error and
                       relative L2, and fail when they exceed the dtype's tolerance
  --device D           device index or name substring (default: VKF_DEVICE)
  --limits SPEC        lower device limits: "phone", or comma-separated
                       shared_memory=N, workgroup_invocations=N, workgroup_count=N,
                       storage_buffer_range=N, push_constants=N, no_fp16_storage, ...
  -h, --help           show this help

environment:
  VKF_DEVICE, VKF_LIMITS  as --device and --limits
  VKF_VALIDATION          1 enables the Khronos validation layer; any message fails
)";

using vkf::cli::UsageError;

struct Options {
    std::string q_path, k_path, v_path;
    std::optional<std::string> out_path;
    vkf::MaskMode mask = vkf::MaskMode::Causal;
    std::optional<vkf::AlibiMode> alibi; // unset: causal
    bool no_alibi = false;
    float max_bias = 8.0f;
    std::optional<std::string> slopes_path;
    std::optional<float> scale;
    std::optional<std::string> kv_lens_path;
    std::optional<vkf::DType> dtype;
    std::optional<std::string> device;
    vkf::LimitOverrides limits;
    bool naive = false;
    bool check = false;
    bool help = false;
};

float parse_float(std::string_view option, const std::string& text) {
    const double value = vkf::cli::parse_number(option, text);
    if (std::fabs(value) > std::numeric_limits<float>::max()) {
        throw UsageError{std::string(option) + " needs a finite number, not '" + text + "'"};
    }
    return static_cast<float>(value);
}

Options parse_options(int argc, char** argv) {
    Options options;
    vkf::cli::ArgReader a(argc, argv);
    while (a.next()) {
        const std::string_view name = a.name();
        auto value = [&] { return a.value(); };
        auto flag = [&] { a.flag(); };

        if (name == "--q") {
            options.q_path = value();
        } else if (name == "--k") {
            options.k_path = value();
        } else if (name == "--v") {
            options.v_path = value();
        } else if (name == "--out") {
            options.out_path = value();
        } else if (name == "--mask") {
            const std::string mode = value();
            if (mode == "causal") {
                options.mask = vkf::MaskMode::Causal;
            } else if (mode == "none") {
                options.mask = vkf::MaskMode::None;
            } else {
                throw UsageError{"--mask is causal or none, not '" + mode + "'"};
            }
        } else if (name == "--alibi") {
            const std::string mode = value();
            if (mode == "causal") {
                options.alibi = vkf::AlibiMode::Causal;
            } else if (mode == "symmetric") {
                options.alibi = vkf::AlibiMode::Symmetric;
            } else {
                throw UsageError{"--alibi is causal or symmetric, not '" + mode + "'"};
            }
        } else if (name == "--no-alibi") {
            flag();
            options.no_alibi = true;
        } else if (name == "--max-bias") {
            options.max_bias = parse_float(name, value());
        } else if (name == "--slopes") {
            options.slopes_path = value();
        } else if (name == "--scale") {
            options.scale = parse_float(name, value());
        } else if (name == "--kv-lens") {
            options.kv_lens_path = value();
        } else if (name == "--dtype") {
            const std::string dtype = value();
            if (dtype == "f32") {
                options.dtype = vkf::DType::F32;
            } else if (dtype == "f16") {
                options.dtype = vkf::DType::F16;
            } else {
                throw UsageError{"--dtype is f32 or f16, not '" + dtype + "'"};
            }
        } else if (name == "--device") {
            options.device = value();
        } else if (name == "--limits") {
            options.limits = vkf::cli::parse_limits(name, value(), options.limits);
        } else if (name == "--naive") {
            flag();
            options.naive = true;
        } else if (name == "--check") {
            flag();
            options.check = true;
        } else if (name == "-h" || name == "--help") {
            flag();
            options.help = true;
        } else {
            a.unknown();
        }
    }
    if (options.help) {
        return options;
    }
    if (options.q_path.empty() || options.k_path.empty() || options.v_path.empty()) {
        throw UsageError{"--q, --k and --v are required"};
    }
    if (options.no_alibi && options.alibi) {
        throw UsageError{"--no-alibi and --alibi contradict each other"};
    }
    if (options.no_alibi && options.slopes_path) {
        throw UsageError{"--slopes has no effect with --no-alibi"};
    }
    return options;
}

// --- inputs --------------------------------------------------------------------------

// NumPy's names, which the .npy inputs are written with.
const char* numpy_name(vkf::DType dtype) {
    switch (dtype) {
    case vkf::DType::F32: return "float32";
    case vkf::DType::F16: return "float16";
    case vkf::DType::I32: return "int32";
    case vkf::DType::U32: return "uint32";
    case vkf::DType::I64: return "int64";
    default: return vkf::to_string(dtype);
    }
}

std::string shape_of(const vkf::NpyArray& a) { return vkf::shape_text(a.shape); }

struct Tensor {
    const char* name; // "Q", "K" or "V"
    vkf::NpyArray array;
};

// A 4-d float32 or float16 array whose dimensions fit the GPU op's 32-bit sizes.
void check_tensor(const Tensor& t) {
    if (t.array.dtype != vkf::DType::F32 && t.array.dtype != vkf::DType::F16) {
        throw vkf::Error(std::string(t.name) + " has dtype " + numpy_name(t.array.dtype) +
                         "; expected float32 or float16");
    }
    if (t.array.shape.size() != 4) {
        throw vkf::Error(std::string(t.name) + " has shape " + shape_of(t.array) +
                         "; expected 4 dimensions [batch, len, heads, head_dim]");
    }
    for (const std::size_t dim : t.array.shape) {
        if (dim == 0 || dim > std::numeric_limits<std::uint32_t>::max()) {
            throw vkf::Error(std::string(t.name) + " has shape " + shape_of(t.array) +
                             "; every dimension must be between 1 and 2^32 - 1");
        }
    }
}

// The attention shape the three tensors describe, or an error naming the disagreement.
vkf::AttentionShape attention_shape(const Tensor& q, const Tensor& k, const Tensor& v) {
    for (const Tensor* t : {&q, &k, &v}) {
        check_tensor(*t);
    }
    for (const Tensor* t : {&k, &v}) {
        if (t->array.dtype != q.array.dtype) {
            throw vkf::Error(std::string("Q has dtype ") + numpy_name(q.array.dtype) + " but " + t->name + " has " +
                             numpy_name(t->array.dtype) + "; Q, K and V must have the same dtype");
        }
    }
    if (k.array.shape != v.array.shape) {
        throw vkf::Error("K has shape " + shape_of(k.array) + " but V has " + shape_of(v.array) +
                         "; K and V must have the same shape");
    }
    const auto& qs = q.array.shape;
    const auto& ks = k.array.shape;
    if (qs[0] != ks[0]) {
        throw vkf::Error("Q has shape " + shape_of(q.array) + " but K has " + shape_of(k.array) +
                         ": the batch sizes (dimension 0) differ");
    }
    if (qs[3] != ks[3]) {
        throw vkf::Error("Q has shape " + shape_of(q.array) + " but K has " + shape_of(k.array) +
                         ": the head sizes (dimension 3) differ");
    }
    if (qs[2] % ks[2] != 0) {
        throw vkf::Error("Q has shape " + shape_of(q.array) + " but K has " + shape_of(k.array) + ": Q's " +
                         std::to_string(qs[2]) + " heads are not a multiple of K and V's " + std::to_string(ks[2]));
    }
    auto u32 = [](std::size_t n) { return static_cast<std::uint32_t>(n); };
    return vkf::AttentionShape{.batch = u32(qs[0]),
                               .q_len = u32(qs[1]),
                               .kv_len = u32(ks[1]),
                               .n_head = u32(qs[2]),
                               .n_kv_head = u32(ks[2]),
                               .head_dim = u32(qs[3])};
}

std::vector<float> read_slopes(const std::string& path, std::uint32_t n_head) {
    const vkf::NpyArray a = vkf::read_npy(path);
    if (a.dtype != vkf::DType::F32 || a.shape.size() != 1 || a.shape[0] != n_head) {
        throw vkf::Error("slopes (" + path + ") has dtype " + numpy_name(a.dtype) + " and shape " + shape_of(a) +
                         "; expected float32 [" + std::to_string(n_head) + "] (one slope per query head)");
    }
    return vkf::npy_as_float32(a);
}

std::vector<std::uint32_t> read_kv_lens(const std::string& path, std::uint32_t batch) {
    const vkf::NpyArray a = vkf::read_npy(path);
    if ((a.dtype != vkf::DType::I32 && a.dtype != vkf::DType::U32) || a.shape.size() != 1 ||
        a.shape[0] != batch) {
        throw vkf::Error("kv-lens (" + path + ") has dtype " + numpy_name(a.dtype) + " and shape " + shape_of(a) +
                         "; expected int32 or uint32 [" + std::to_string(batch) + "] (one length per batch entry)");
    }
    std::vector<std::uint32_t> lens(batch);
    for (std::uint32_t b = 0; b < batch; ++b) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, a.data.data() + 4 * b, 4);
        if (a.dtype == vkf::DType::I32 && static_cast<std::int32_t>(bits) < 0) {
            throw vkf::Error("kv-lens (" + path + ")[" + std::to_string(b) + "] is " +
                             std::to_string(static_cast<std::int32_t>(bits)) + "; lengths cannot be negative");
        }
        lens[b] = bits;
    }
    return lens;
}

// The tensor as the GPU stores it, and as float32 values exactly equal to what it reads
// (rounded to fp16 for fp16 storage) for the reference.
struct DeviceTensor {
    std::vector<std::byte> bytes;
    std::vector<float> values;
};

DeviceTensor to_storage(const vkf::NpyArray& array, vkf::DType dtype) {
    DeviceTensor t;
    t.values = vkf::npy_as_float32(array);
    if (dtype == vkf::DType::F16) {
        if (array.dtype == vkf::DType::F16) {
            t.bytes = array.data;
        } else {
            const std::vector<std::uint16_t> halves = vkf::floats_to_halves(t.values);
            const auto raw = std::as_bytes(std::span(halves));
            t.bytes.assign(raw.begin(), raw.end());
            t.values = vkf::halves_to_floats(halves);
        }
    } else {
        const auto raw = std::as_bytes(std::span(t.values));
        t.bytes.assign(raw.begin(), raw.end());
    }
    return t;
}

std::vector<float> output_values(const std::vector<std::byte>& bytes, vkf::DType dtype) {
    if (dtype == vkf::DType::F16) {
        std::vector<std::uint16_t> halves(bytes.size() / 2);
        std::memcpy(halves.data(), bytes.data(), bytes.size());
        return vkf::halves_to_floats(halves);
    }
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
}

std::string fixed(double v, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, v);
    return buffer;
}

// --- running -------------------------------------------------------------------------

int run(const Options& options) {
    const Tensor q{"Q", vkf::read_npy(options.q_path)};
    const Tensor k{"K", vkf::read_npy(options.k_path)};
    const Tensor v{"V", vkf::read_npy(options.v_path)};
    const vkf::AttentionShape shape = attention_shape(q, k, v);

    const vkf::DType input_dtype = q.array.dtype == vkf::DType::F16 ? vkf::DType::F16 : vkf::DType::F32;
    const vkf::DType dtype = options.dtype.value_or(input_dtype);

    std::vector<float> slopes;
    if (options.slopes_path) {
        slopes = read_slopes(*options.slopes_path, shape.n_head);
    }
    std::vector<std::uint32_t> kv_lens;
    if (options.kv_lens_path) {
        kv_lens = read_kv_lens(*options.kv_lens_path, shape.batch);
    }
    const vkf::AttentionParams params{
        .shape = shape,
        .mask = options.mask,
        .alibi = options.no_alibi ? vkf::AlibiMode::Off : options.alibi.value_or(vkf::AlibiMode::Causal),
        .max_bias = options.max_bias,
        .scale = options.scale,
        .slopes = slopes,
        .kv_lens = kv_lens,
    };
    vkf::validate(params);

    vkf::Context ctx(vkf::ContextOptions{.device = options.device, .limits = options.limits});

    // Constructing the op first reports what the device cannot do before any upload.
    std::optional<vkf::Attention> tiled;
    std::optional<vkf::NaiveAttention> naive;
    std::string method;
    if (options.naive) {
        naive.emplace(ctx, params, dtype);
        method = "naive (3 passes, " + std::to_string(naive->scores_bytes()) + " bytes of scores)";
    } else {
        tiled.emplace(ctx, params, dtype);
        method = "tiled (" + tiled->plan().describe() + ")";
    }

    const DeviceTensor q_data = to_storage(q.array, dtype);
    const DeviceTensor k_data = to_storage(k.array, dtype);
    const DeviceTensor v_data = to_storage(v.array, dtype);
    auto upload = [&](const DeviceTensor& t, const char* name) {
        vkf::Buffer buffer = ctx.create_buffer(t.bytes.size(), vkf::MemoryKind::Device, name);
        ctx.upload(buffer, std::span<const std::byte>(t.bytes));
        return buffer;
    };
    const vkf::Buffer q_buffer = upload(q_data, "Q");
    const vkf::Buffer k_buffer = upload(k_data, "K");
    const vkf::Buffer v_buffer = upload(v_data, "V");
    const vkf::Buffer o_buffer = ctx.create_buffer(q_data.bytes.size(), vkf::MemoryKind::Device, "O");

    const bool timed = ctx.limits().timestamps;
    auto list = ctx.command_list(timed);
    if (naive) {
        naive->record(*list, whole(q_buffer), whole(k_buffer), whole(v_buffer), whole(o_buffer));
    } else {
        tiled->record(*list, whole(q_buffer), whole(k_buffer), whole(v_buffer), whole(o_buffer));
    }
    ctx.submit(*list);
    std::string gpu_time = "GPU time unavailable (no timestamps)";
    if (timed) {
        double ms = 0.0;
        for (const vkf::OpTiming& t : list->timings()) {
            ms += t.ms;
        }
        gpu_time = "GPU " + fixed(ms, 3) + " ms";
    }

    std::vector<std::byte> out_bytes(o_buffer.size());
    ctx.download(o_buffer, std::span<std::byte>(out_bytes));
    if (options.out_path) {
        vkf::write_npy(*options.out_path, dtype == vkf::DType::F16 ? vkf::DType::F16 : vkf::DType::F32,
                       q.array.shape, out_bytes);
    }

    std::cout << "vkf-attention: " << ctx.device_info().name << ", Q " << shape_of(q.array) << ", K/V "
              << shape_of(k.array) << ", " << vkf::to_string(dtype) << ", " << method << ", " << gpu_time << '\n';

    int status = 0;
    if (options.check) {
        const std::vector<double> reference = vkf::reference::attention(params, q_data.values, k_data.values,
                                                                       v_data.values);
        const vkf::ErrorStats stats = vkf::compare_to_reference(output_values(out_bytes, dtype), reference);
        // DESIGN.md's tolerances for the storage type.
        const double tolerance = dtype == vkf::DType::F16 ? 2e-3 : 1e-5;
        const bool ok = stats.max_rel < tolerance && stats.rel_l2 < tolerance;
        std::cout << "check: " << vkf::describe(stats) << " (tolerance " << tolerance << ": "
                  << (ok ? "ok" : "EXCEEDED") << ")\n";
        if (!ok) {
            std::cout.flush();
            std::cerr << "vkf-attention: error: the output differs from the CPU reference beyond the "
                      << vkf::to_string(dtype) << " tolerance " << tolerance << '\n';
            status = kExitFailure;
        }
    }
    if (ctx.validation_enabled() && ctx.validation_message_count() > 0) {
        std::cout.flush();
        std::cerr << "vkf-attention: error: " << ctx.validation_message_count() << " Vulkan validation message(s)\n";
        status = kExitFailure;
    }
    return status;
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    try {
        options = parse_options(argc, argv);
    } catch (const UsageError& e) {
        std::cerr << "vkf-attention: " << e.message << " (see --help)\n";
        return kExitUsage;
    }
    if (options.help) {
        std::cout << kUsage;
        return 0;
    }
    try {
        return run(options);
    } catch (const std::exception& e) { // vkf::Error, or std::bad_alloc for inputs too large
        std::cout.flush();
        std::cerr << "vkf-attention: error: " << e.what() << '\n';
        return kExitFailure;
    }
}
