#pragma once
// The runtime's own file on disk, the pipeline cache (runtime/pipeline_cache.hpp), read and
// written under the rules host/util/files.hpp holds for every file a user's path reaches
// (docs/DESIGN.md "Files users hand us"), in the few lines the runtime needs: runtime/
// includes nothing from host/ (docs/DESIGN.md "Layers").
//
// Reading: opened non-blocking (a FIFO in the file's place never hangs the program) and
// refused unless a regular file of at most a given size; read with pread, so a file truncated
// meanwhile is an error, never a fault. Writing: under a temporary name beside the file,
// every write, the flush and the close checked, then renamed over it, so a full disk or a
// crash never leaves half a file under the final name.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace vkf {

// The whole file. Throws vkf::Error "<what> '<path>' ..." when it cannot be opened, is not a
// regular file ("is a FIFO (named pipe), not a regular file"), holds more than max_bytes or
// ends early.
std::string read_cache_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what);

// Replaces the file with `parts`, one after the other, through a temporary beside it. Throws
// vkf::Error naming the file and the system's reason; the temporary is then removed and an
// existing file left as it was. Callers check first that nothing but a regular file is there.
void write_cache_file(const std::filesystem::path& path, std::span<const std::span<const std::byte>> parts,
                      std::string_view what);

}  // namespace vkf
