// vkf-attention: runs one ALiBi attention call on .npy tensors, with the tiled GPU op (or
// the naive baseline), writes the output as .npy and optionally checks it against the
// double-precision CPU reference. For trying shapes and devices, and for comparing with
// other implementations from Python.

#include "apps/common/app_main.hpp"
#include "apps/common/options.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/io/npy.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/attention_naive.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/reference/attention.hpp"
#include "host/util/compare.hpp"
#include "host/util/half.hpp"
#include "runtime/context.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Runs softmax(scale * Q.K^T + ALiBi bias, masked) . V on the GPU. Q is [batch, q_len,\n"
    "n_head, head_dim], K and V are [batch, kv_len, n_kv_head, head_dim] (float32 or\n"
    "float16, all three alike); n_head must be a multiple of n_kv_head. When q_len < kv_len,\n"
    "query row i sits at position kv_len - q_len + i (a KV cache). The output has Q's shape.\n";

constexpr const char* kFooter =
    "exit status: 0 ok, 1 failure, 2 bad command line, 3 --check above the tolerance\n"
    "\n"
    "environment:\n"
    "  VKF_DEVICE, VKF_LIMITS  as --device and --limits\n"
    "  VKF_VALIDATION          1 enables the Khronos validation layer; any message fails";

struct Options {
    std::string q_path, k_path, v_path;
    std::optional<std::string> out_path;
    vkf::MaskMode mask = vkf::MaskMode::Causal;
    std::optional<vkf::AlibiMode> alibi;  // unset: causal
    bool no_alibi = false;
    float max_bias = 8.0f;
    std::optional<std::string> slopes_path;
    std::optional<float> scale;
    std::optional<std::string> kv_lens_path;
    std::uint32_t window = 0;
    std::optional<vkf::DType> dtype;
    vkf::app::DeviceOptions device;
    bool naive = false;
    bool check = false;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    cli.footer(kFooter);
    add_text(cli, "--q", "FILE", o.q_path, "the query tensor (.npy)")->required();
    add_text(cli, "--k", "FILE", o.k_path, "the key tensor (.npy)")->required();
    add_text(cli, "--v", "FILE", o.v_path, "the value tensor (.npy)")->required();
    add_text(cli, "--out", "FILE", o.out_path, "write the output here (.npy, in the GPU storage dtype)");
    add_choice(cli, "--mask", o.mask, {{"causal", vkf::MaskMode::Causal}, {"none", vkf::MaskMode::None}},
               "causal hides keys after the query's position (default causal)");
    CLI::Option* alibi = add_choice(cli, "--alibi", o.alibi,
                                    {{"causal", vkf::AlibiMode::Causal}, {"symmetric", vkf::AlibiMode::Symmetric}},
                                    "ALiBi bias slope*(j-i) (decoders) or -slope*|i-j| (encoders);\ndefault causal");
    CLI::Option* no_alibi = cli.add_flag("--no-alibi", o.no_alibi, "no position bias");
    add_number(cli, "--max-bias", "B", o.max_bias, "maximum ALiBi bias for the slope formula (default 8)");
    CLI::Option* slopes =
        add_text(cli, "--slopes", "FILE", o.slopes_path, "explicit per-head slopes, float32 [n_head] (.npy)");
    no_alibi->excludes(alibi)->excludes(slopes);
    add_number(cli, "--scale", "X", o.scale, "softmax scale (default 1/sqrt(head_dim))");
    add_text(cli, "--kv-lens", "FILE", o.kv_lens_path, "valid keys per batch entry, int32 or uint32 [batch] (.npy)");
    add_integer(cli, "--window", "W", o.window, 0u,
                "key window: query position i sees keys j with |i - j| <= W (with\n"
                "the causal mask i - W <= j <= i; MPT's sliding_window_size); default 0, full");
    add_choice(cli, "--dtype", o.dtype, {{"f32", vkf::DType::F32}, {"f16", vkf::DType::F16}},
               "storage type on the GPU (default: the inputs' dtype)");
    cli.add_flag("--naive", o.naive, "run the naive three-pass baseline instead of the tiled op");
    cli.add_flag("--check", o.check,
                 "also run the CPU reference; print max relative error and\n"
                 "relative L2, and exit with status 3 when they exceed the dtype's\ntolerance");
    add_device_options(cli, o.device);
}

// --- inputs --------------------------------------------------------------------------

// NumPy's names, which the .npy inputs are written with.
const char* numpy_name(vkf::DType dtype) {
    switch (dtype) {
        case vkf::DType::F32:
            return "float32";
        case vkf::DType::F16:
            return "float16";
        case vkf::DType::I32:
            return "int32";
        case vkf::DType::U32:
            return "uint32";
        case vkf::DType::I64:
            return "int64";
        default:
            return vkf::to_string(dtype);
    }
}

std::string shape_of(const vkf::NpyArray& a) {
    return vkf::shape_text(a.shape);
}

struct Tensor {
    const char* name;  // "Q", "K" or "V"
    vkf::NpyArray array;
};

// A 4-d float32 or float16 array whose dimensions fit the GPU op's 32-bit sizes.
void check_tensor(const Tensor& t) {
    if (t.array.dtype != vkf::DType::F32 && t.array.dtype != vkf::DType::F16) {
        throw vkf::Error(
            fmt::format("{} has dtype {}; expected float32 or float16", t.name, numpy_name(t.array.dtype)));
    }
    if (t.array.shape.size() != 4) {
        throw vkf::Error(fmt::format("{} has shape {}; expected 4 dimensions [batch, len, heads, head_dim]", t.name,
                                     shape_of(t.array)));
    }
    for (const std::size_t dim : t.array.shape) {
        if (dim == 0 || dim > std::numeric_limits<std::uint32_t>::max()) {
            throw vkf::Error(fmt::format("{} has shape {}; every dimension must be between 1 and 2^32 - 1", t.name,
                                         shape_of(t.array)));
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
            throw vkf::Error(fmt::format("Q has dtype {} but {} has {}; Q, K and V must have the same dtype",
                                         numpy_name(q.array.dtype), t->name, numpy_name(t->array.dtype)));
        }
    }
    if (k.array.shape != v.array.shape) {
        throw vkf::Error(fmt::format("K has shape {} but V has {}; K and V must have the same shape", shape_of(k.array),
                                     shape_of(v.array)));
    }
    const auto& qs = q.array.shape;
    const auto& ks = k.array.shape;
    const auto disagreement = [&](const std::string& what) {
        return vkf::Error(fmt::format("Q has shape {} but K has {}: {}", shape_of(q.array), shape_of(k.array), what));
    };
    if (qs[0] != ks[0]) {
        throw disagreement("the batch sizes (dimension 0) differ");
    }
    if (qs[3] != ks[3]) {
        throw disagreement("the head sizes (dimension 3) differ");
    }
    if (qs[2] % ks[2] != 0) {
        throw disagreement(fmt::format("Q's {} heads are not a multiple of K and V's {}", qs[2], ks[2]));
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
        throw vkf::Error(
            fmt::format("slopes ({}) has dtype {} and shape {}; expected float32 [{}] (one slope per "
                        "query head)",
                        path, numpy_name(a.dtype), shape_of(a), n_head));
    }
    return vkf::npy_as_float32(a);
}

std::vector<std::uint32_t> read_kv_lens(const std::string& path, std::uint32_t batch) {
    const vkf::NpyArray a = vkf::read_npy(path);
    if ((a.dtype != vkf::DType::I32 && a.dtype != vkf::DType::U32) || a.shape.size() != 1 || a.shape[0] != batch) {
        throw vkf::Error(
            fmt::format("kv-lens ({}) has dtype {} and shape {}; expected int32 or uint32 [{}] (one "
                        "length per batch entry)",
                        path, numpy_name(a.dtype), shape_of(a), batch));
    }
    std::vector<std::uint32_t> lens(batch);
    for (std::uint32_t b = 0; b < batch; ++b) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, a.data.data() + 4 * b, 4);
        if (a.dtype == vkf::DType::I32 && static_cast<std::int32_t>(bits) < 0) {
            throw vkf::Error(fmt::format("kv-lens ({})[{}] is {}; lengths cannot be negative", path, b,
                                         static_cast<std::int32_t>(bits)));
        }
        lens[b] = bits;
    }
    return lens;
}

// The tensor's values as the GPU stores them in `dtype` (rounded to fp16 for fp16 storage):
// exactly what the kernel reads, for the reference.
std::vector<float> stored_values(const vkf::NpyArray& array, vkf::DType dtype) {
    return vkf::rounded_to(dtype, vkf::npy_as_float32(array));
}

// --- running -------------------------------------------------------------------------

// The array's dtype and shape from its header, its data still unread: shapes and device
// limits are checked before gigabytes are read.
vkf::NpyArray header_of(const std::string& path) {
    vkf::NpyInfo info = vkf::read_npy_header(path);
    return vkf::NpyArray{.dtype = info.dtype, .shape = std::move(info.shape), .data = {}};
}

int run(const Options& options) {
    Tensor q{"Q", header_of(options.q_path)};
    Tensor k{"K", header_of(options.k_path)};
    Tensor v{"V", header_of(options.v_path)};
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
        .window = options.window,
    };
    vkf::validate(params);

    vkf::Context ctx(options.device.context_options());

    // Constructing the op first reports what the device cannot do before any upload.
    std::optional<vkf::Attention> tiled;
    std::optional<vkf::NaiveAttention> naive;
    std::string method;
    if (options.naive) {
        naive.emplace(ctx, params, dtype);
        method = fmt::format("naive (3 passes, {} of scores)", vkf::size_text(naive->scores_bytes()));
    } else {
        tiled.emplace(ctx, params, dtype);
        method = fmt::format("tiled ({})", tiled->plan().describe());
    }

    for (auto [t, path] : {std::pair{&q, &options.q_path}, {&k, &options.k_path}, {&v, &options.v_path}}) {
        vkf::NpyArray full = vkf::read_npy(*path);
        if (full.dtype != t->array.dtype || full.shape != t->array.shape) {
            throw vkf::Error(fmt::format("{} ({}) changed while it was being read", t->name, *path));
        }
        t->array = std::move(full);
    }
    const std::vector<float> q_values = stored_values(q.array, dtype);
    const std::vector<float> k_values = stored_values(k.array, dtype);
    const std::vector<float> v_values = stored_values(v.array, dtype);
    const vkf::DeviceTensor q_tensor = vkf::upload_tensor(ctx, q_values, dtype, "Q");
    const vkf::DeviceTensor k_tensor = vkf::upload_tensor(ctx, k_values, dtype, "K");
    const vkf::DeviceTensor v_tensor = vkf::upload_tensor(ctx, v_values, dtype, "V");
    const vkf::DeviceTensor o_tensor(ctx, q_values.size(), dtype, "O");

    const bool timed = ctx.limits().timestamps;
    auto list = ctx.command_list(timed);
    if (naive) {
        naive->record(*list, q_tensor.range(), k_tensor.range(), v_tensor.range(), o_tensor.range());
    } else {
        tiled->record(*list, q_tensor.range(), k_tensor.range(), v_tensor.range(), o_tensor.range());
    }
    ctx.submit(*list);
    std::string gpu_time = "GPU time unavailable (no timestamps)";
    if (timed) {
        double ms = 0.0;
        for (const vkf::OpTiming& t : list->timings()) {
            ms += t.ms;
        }
        gpu_time = "GPU " + vkf::fixed(ms, 3) + " ms";
    }

    const std::vector<float> out = vkf::download_tensor(ctx, o_tensor);
    if (options.out_path) {
        if (dtype == vkf::DType::F16) {
            const std::vector<std::uint16_t> halves = vkf::floats_to_halves(out);  // exact: they came from halves
            vkf::write_npy(*options.out_path, vkf::DType::F16, q.array.shape,
                           std::as_bytes(std::span<const std::uint16_t>(halves)));
        } else {
            vkf::write_npy_f32(*options.out_path, q.array.shape, out);
        }
    }

    fmt::print("vkf-attention: {}, Q {}, K/V {}, {}, {}, {}\n", ctx.device_info().name, shape_of(q.array),
               shape_of(k.array), vkf::to_string(dtype), method, gpu_time);

    int status = vkf::app::kExitOk;
    if (options.check) {
        const std::vector<double> reference = vkf::reference::attention(params, q_values, k_values, v_values);
        const vkf::ErrorStats stats = vkf::compare_to_reference(out, reference);
        const double tolerance = vkf::tolerance(dtype);
        const bool ok = stats.max_rel < tolerance && stats.rel_l2 < tolerance;
        fmt::print("check: {} (tolerance {}: {})\n", vkf::describe(stats), tolerance, ok ? "ok" : "EXCEEDED");
        if (!ok) {
            std::fflush(stdout);
            fmt::print(stderr,
                       "vkf-attention: error: the output differs from the CPU reference beyond the {} tolerance {}\n",
                       vkf::to_string(dtype), tolerance);
            status = vkf::app::kExitCheckFailed;
        }
    }
    if (ctx.validation_enabled() && ctx.validation_message_count() > 0) {
        std::fflush(stdout);
        fmt::print(stderr, "vkf-attention: error: {} Vulkan validation message(s)\n", ctx.validation_message_count());
        status = vkf::app::kExitFailure;
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-attention", kAbout);
    Options options;
    declare_options(cli, options);
    // std::bad_alloc for inputs too large ends as a failure like a vkf::Error.
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
}
