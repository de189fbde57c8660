#pragma once
// vkf-run's options for the sampler chain's stages beyond --temp, --top-k, --top-p and
// --seed (host/sample/sampler_stages.hpp), named as llama.cpp's llama-cli names them.

#include "host/sample/sampling_params.hpp"

#include <CLI/CLI.hpp>

namespace vkf::run_cli {

void add_sampler_chain_options(CLI::App& cli, SamplingParams& sampling);

}  // namespace vkf::run_cli
