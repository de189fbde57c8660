#pragma once
// POST /tokenize and /detokenize, as llama-server answers them: the served decoder's
// tokenizer (the embedding model's when there is no decoder), text to ids and back.

#include "apps/server/routes.hpp"

#include <httplib.h>

namespace vkf::server {

void tokenize(const Served& served, const httplib::Request& req, httplib::Response& res);
void detokenize(const Served& served, const httplib::Request& req, httplib::Response& res);

}  // namespace vkf::server
