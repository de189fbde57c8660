#pragma once
// vkf-run --devices D,D,... [--split auto|N,N]: one prompt through a model split by layers
// over several devices of this process (host/model/split_session.hpp); the same output as a
// run on one device, plus a line per stage.

#include "apps/run/options.hpp"

namespace vkf::run_cli {

int run_split(const Options& o);

}  // namespace vkf::run_cli
