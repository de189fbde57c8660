// The logits llama.cpp itself computes for a sequence of token ids, every position: the
// independent reference gguf_families_test.py holds vkformer's Refact against. Compiled by
// llama_logits.py against the npm package's llama.cpp headers and prebuilt libraries.
//
// usage: llama_logits MODEL.gguf ID,ID,... OUT.f32   (OUT: float32 [n_ids, n_vocab], raw)

#include "ggml-backend.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: llama_logits MODEL.gguf ID,ID,... OUT.f32\n");
        return 2;
    }
    std::vector<llama_token> ids;
    std::stringstream list(argv[2]);
    for (std::string item; std::getline(list, item, ',');) {
        ids.push_back(static_cast<llama_token>(std::stol(item)));
    }
    ggml_backend_load_all();  // the CPU backend, from the libraries' folder (the working directory)
    llama_backend_init();
    llama_model_params model_params = llama_model_default_params();
    model_params.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(argv[1], model_params);
    if (model == nullptr) {
        std::fprintf(stderr, "llama_logits: cannot load %s\n", argv[1]);
        return 1;
    }
    llama_context_params context_params = llama_context_default_params();
    context_params.n_ctx = context_params.n_batch = context_params.n_ubatch = 256;
    context_params.n_threads = context_params.n_threads_batch = 1;
    // Its default KV cache is f16, and its CPU flash attention rounds q·k through f16 even over
    // an f32 cache (4.4e-4 of the largest logit on the tiny Refact, 3e-7 without it): vkf-run's
    // --kv f32 is compared with an f32 cache and the plain softmax.
    context_params.type_k = context_params.type_v = GGML_TYPE_F32;
    context_params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* context = llama_init_from_model(model, context_params);
    if (context == nullptr || ids.empty() || ids.size() > 256) {
        std::fprintf(stderr, "llama_logits: no context for %zu ids\n", ids.size());
        return 1;
    }
    llama_batch batch = llama_batch_init(static_cast<int32_t>(ids.size()), 0, 1);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        batch.token[i] = ids[i];
        batch.pos[i] = static_cast<llama_pos>(i);
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = static_cast<int32_t>(ids.size());
    if (llama_decode(context, batch) != 0) {
        std::fprintf(stderr, "llama_logits: llama_decode failed\n");
        return 1;
    }
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE* out = std::fopen(argv[3], "wb");
    if (out == nullptr) {
        return 1;
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::fwrite(llama_get_logits_ith(context, static_cast<int32_t>(i)), sizeof(float),
                    static_cast<std::size_t>(n_vocab), out);
    }
    std::fclose(out);
    std::printf("%zu %d\n", ids.size(), n_vocab);
    llama_batch_free(batch);
    llama_free(context);
    llama_model_free(model);
    return 0;
}
