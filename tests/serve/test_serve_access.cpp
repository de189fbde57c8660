// host/serve: the metrics registry (Prometheus text, refusals, concurrent updates) and the
// access rules (Host names, CORS origins, bearer keys, JSON bodies only).

#include "host/serve/access.hpp"
#include "host/serve/api_error.hpp"
#include "host/serve/metrics.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace vkf::serve {
namespace {

TEST(ServeMetrics, PrometheusText) {
    Metrics m;
    Metrics::Counter requests = m.declare_counter("vkf_requests_total", "Requests.");
    Metrics::Gauge active = m.declare_gauge("vkf_active_sequences", "Active.");
    requests.add(1, R"(route="chat",status="200")");
    requests.add(2, R"(route="chat",status="200")");
    active.set(3);
    active.set(0.25);
    EXPECT_EQ(requests.value(R"(route="chat",status="200")"), 3.0);
    EXPECT_EQ(m.render(),
              "# HELP vkf_active_sequences Active.\n"
              "# TYPE vkf_active_sequences gauge\n"
              "vkf_active_sequences 0.25\n"
              "# HELP vkf_requests_total Requests.\n"
              "# TYPE vkf_requests_total counter\n"
              "vkf_requests_total{route=\"chat\",status=\"200\"} 3\n");
}

// Misuse a handle cannot rule out at compile time is refused by name.
TEST(ServeMetrics, RefusesBadNamesTypeClashesAndFallingCounters) {
    Metrics m;
    Metrics::Counter c = m.declare_counter("vkf_c_total", "C.");
    c.add(2);
    // The same name and type again: the same family, its count kept.
    EXPECT_EQ(m.declare_counter("vkf_c_total", "C.").value(), 2.0);
    EXPECT_NE(test::error_message([&] {
                  m.declare_gauge("vkf_c_total", "C.");
              }).find("'vkf_c_total' was declared already as a counter"),
              std::string::npos);
    EXPECT_NE(
        test::error_message([&] { m.declare_counter("vkf c", "C."); }).find("'vkf c' is not a Prometheus metric name"),
        std::string::npos);
    EXPECT_NE(test::error_message([&] { m.declare_gauge("1st", "G."); }).find("not a Prometheus"), std::string::npos);
    EXPECT_NE(test::error_message([&] { c.add(-1); }).find("a counter cannot go down"), std::string::npos);
    // A gauge goes both ways; a counter copied from elsewhere is set.
    Metrics::Gauge g = m.declare_gauge("vkf_g", "G.");
    g.add(3);
    g.add(-1);
    EXPECT_EQ(g.value(), 2.0);
    c.set(7);
    EXPECT_EQ(c.value(), 7.0);
}

TEST(ServeMetrics, ConcurrentUpdatesAreAllCounted) {
    Metrics m;
    Metrics::Counter c = m.declare_counter("c", "c");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&m, c]() mutable {
            for (int i = 0; i < 1000; ++i) {
                c.add(1);
                (void)m.render();
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    EXPECT_EQ(c.value(), 4000.0);
}

TEST(ServeAccess, LoopbackAnswersOnlyLoopbackNames) {
    const HostPolicy p = host_policy("127.0.0.1", {});
    for (const char* host : {"127.0.0.1", "127.0.0.1:8080", "localhost", "LocalHost:8080", "[::1]", "[::1]:8080"}) {
        EXPECT_TRUE(host_allowed(p, std::string_view(host))) << host;
    }
    // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1.
    for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.", "",
                             "localhost:80x", "[::1", "::1", "127.0.0.2"}) {
        EXPECT_FALSE(host_allowed(p, std::string_view(host))) << host;
    }
    EXPECT_FALSE(host_allowed(p, std::nullopt));
}

TEST(ServeAccess, OtherAddressesAndExtraNames) {
    const HostPolicy lan = host_policy("192.168.1.5", {"api.example"});
    EXPECT_TRUE(host_allowed(lan, std::string_view("192.168.1.5:8080")));
    EXPECT_TRUE(host_allowed(lan, std::string_view("API.example:443")));
    EXPECT_FALSE(host_allowed(lan, std::string_view("localhost")));
    const HostPolicy v6 = host_policy("::1", {});
    EXPECT_TRUE(host_allowed(v6, std::string_view("[::1]:80")));
    EXPECT_TRUE(host_allowed(v6, std::string_view("localhost")));
    // A wildcard address cannot know its names: any Host, unless --allowed-host lists them.
    EXPECT_TRUE(host_allowed(host_policy("0.0.0.0", {}), std::string_view("anything.example")));
    EXPECT_TRUE(host_allowed(host_policy("0.0.0.0", {}), std::nullopt));
    const HostPolicy listed = host_policy("0.0.0.0", {"box.lan"});
    EXPECT_TRUE(host_allowed(listed, std::string_view("box.lan:8080")));
    EXPECT_TRUE(host_allowed(listed, std::string_view("127.0.0.1")));
    EXPECT_FALSE(host_allowed(listed, std::string_view("evil.example")));
    EXPECT_TRUE(host_allowed(host_policy("127.0.0.1", {"*"}), std::string_view("evil.example")));
    EXPECT_FALSE(allowed_host_problem("box.lan").has_value());
    EXPECT_FALSE(allowed_host_problem("fe80::1").has_value());
    EXPECT_NE(allowed_host_problem("box.lan:8080").value_or("").find("port"), std::string::npos);
    EXPECT_NE(allowed_host_problem("[::1]:8080").value_or("").find("port"), std::string::npos);
    EXPECT_TRUE(allowed_host_problem("http://box.lan").has_value());
}

TEST(ServeAccess, CorsOriginsAreExact) {
    const CorsPolicy none;
    EXPECT_FALSE(none.enabled());
    EXPECT_FALSE(none.allows("http://localhost:3000"));
    const CorsPolicy one{{"http://localhost:3000"}};
    EXPECT_TRUE(one.allows("http://localhost:3000"));
    EXPECT_TRUE(one.allows("HTTP://LOCALHOST:3000"));
    EXPECT_FALSE(one.allows("http://localhost:3001"));
    EXPECT_FALSE(one.allows("http://localhost:3000.evil.example"));
    EXPECT_FALSE(one.allows(""));
    EXPECT_TRUE(CorsPolicy{{"*"}}.allows("http://anything.example"));
    EXPECT_FALSE(origin_problem("http://localhost:3000").has_value());
    EXPECT_FALSE(origin_problem("*").has_value());
    EXPECT_NE(origin_problem("http://localhost:3000/").value_or("").find("no path"), std::string::npos);
    EXPECT_TRUE(origin_problem("localhost:3000").has_value());
}

TEST(ServeAccess, BearerSchemeInAnyCase) {
    EXPECT_EQ(bearer_token("Bearer k-1").value_or(""), "k-1");
    EXPECT_EQ(bearer_token("bearer k-1").value_or(""), "k-1");
    EXPECT_EQ(bearer_token("BEARER   k-1 ").value_or(""), "k-1");
    EXPECT_FALSE(bearer_token("Basic k-1").has_value());
    EXPECT_FALSE(bearer_token("Bearer").has_value());
    EXPECT_FALSE(bearer_token("Bearer ").has_value());
    EXPECT_FALSE(bearer_token("k-1").has_value());
    EXPECT_FALSE(bearer_token("Bearerk-1").has_value());
    EXPECT_TRUE(same_key("k-1", "k-1"));
    EXPECT_FALSE(same_key("k-1", "k-2"));
    EXPECT_FALSE(same_key("k-1", "k-12"));
    EXPECT_FALSE(same_key("", "k"));
}

TEST(ServeAccess, OnlyJsonBodies) {
    EXPECT_TRUE(is_json_media_type("application/json"));
    EXPECT_TRUE(is_json_media_type("Application/JSON; charset=utf-8"));
    EXPECT_TRUE(is_json_media_type(" application/json ;charset=UTF-8"));
    // What a page may send cross-origin without a preflight, and JSON's look-alikes.
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "",
                             "application/jsonp", "application/json-seq", "text/json"}) {
        EXPECT_FALSE(is_json_media_type(type)) << type;
    }
}

TEST(ServeAccess, NewErrorObjects) {
    EXPECT_EQ(host_not_allowed("evil.example").status(), 403);
    EXPECT_NE(std::string(host_not_allowed("evil.example").what()).find("evil.example"), std::string::npos);
    EXPECT_NE(std::string(host_not_allowed("").what()).find("no Host"), std::string::npos);
    EXPECT_EQ(method_not_allowed("PUT", "/v1/completions", "POST").status(), 405);
    EXPECT_EQ(unsupported_media_type("text/plain").status(), 415);
    EXPECT_NE(std::string(unsupported_media_type("text/plain").what()).find("text/plain"), std::string::npos);
    EXPECT_EQ(shutting_down().status(), 503);
    EXPECT_EQ(shutting_down().code().value_or(""), "server_shutting_down");
}

}  // namespace
}  // namespace vkf::serve
