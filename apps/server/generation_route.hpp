#pragma once
// POST /v1/completions and /v1/chat/completions: the request checked and tokenized, handed
// to the engine, and its events answered as one JSON body or streamed as server-sent events.

#include "apps/server/routes.hpp"

namespace vkf::server {

void generation(Served& served, serve::Endpoint endpoint, const httplib::Request& req, httplib::Response& res);

}  // namespace vkf::server
