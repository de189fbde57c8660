#pragma once
// vkf-server's chat page at GET / (apps/server/page/index.html, embedded in the binary at
// build time): the page with what it shows before any request filled in (the model, the
// device, whether chat or completion, whether an API key is needed, the token limit).

#include "apps/server/routes.hpp"

#include <httplib.h>

#include <string>

namespace vkf::server {

// The page, its <!--vkf-info--> placeholder replaced by a JSON script element.
std::string page_html(const Served& served);
void serve_page(const Served& served, httplib::Response& res);

}  // namespace vkf::server
