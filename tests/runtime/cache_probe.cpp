// Run by test_pipeline_cache as a separate process: creates the elementwise pipelines with
// the disk cache in argv[1] and prints what the cache did, one "key=value" per line.

#include "base/error.hpp"
#include "host/ops/elementwise.hpp"

#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: cache_probe CACHE_DIR\n");
        return 2;
    }
    try {
        vkf::Context ctx(vkf::ContextOptions{.validation = true,
                                             .on_message =
                                                 [](vkf::MessageSeverity s, std::string_view m) {
                                                     if (s != vkf::MessageSeverity::Info) {
                                                         std::printf("message=%.*s\n", static_cast<int>(m.size()),
                                                                     m.data());
                                                     }
                                                 },
                                             .pipeline_cache_dir = std::filesystem::path(argv[1])});
        vkf::Buffer a = ctx.create_buffer(4096, vkf::MemoryKind::Device, "a");
        auto list = ctx.command_list();
        vkf::record_fill(ctx, *list, vkf::whole(a), 2.0f);
        vkf::record_copy(ctx, *list, vkf::BufferRange{&a, 0, 2048}, vkf::BufferRange{&a, 2048, 2048});
        vkf::record_add(ctx, *list, vkf::whole(a), vkf::whole(a), vkf::whole(a));
        ctx.submit(*list);
        std::vector<float> out(1024);
        ctx.download(a, std::span(out));
        const auto s = ctx.pipeline_cache_stats();
        std::printf("result=%g\nloaded=%d\nloaded_bytes=%llu\nrejected=%s\ncreated=%u\nhits=%u\nhits_reported=%d\n",
                    static_cast<double>(out[1000]), s.loaded ? 1 : 0, static_cast<unsigned long long>(s.loaded_bytes),
                    s.rejected.c_str(), s.pipelines_created, s.cache_hits, s.hits_reported ? 1 : 0);
        std::printf("file=%s\n", s.file.string().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::printf("error=%s\n", e.what());
        return 1;
    }
}
